"""Serve the API and admin UI with uvicorn."""

from __future__ import annotations

import uvicorn

from tablequeue.database import connect

from .app import create_app
from .auth import Auth
from .limits import MAX_REQUEST_HEAD_BYTES


def run(db_url: str, host: str, port: int, auth: Auth) -> None:
    with connect(db_url) as database:
        app = create_app(database, auth, listen_host=host)
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level="info",
            access_log=False,
            h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES,
        )
