"""Serve the API and admin UI with uvicorn."""

from __future__ import annotations

import contextlib
import os

import uvicorn

from tablequeue import connect, json_logs
from tablequeue.settings.api import ApiSettings

from .app import create_app
from .auth import Auth
from .limits import MAX_REQUEST_HEAD_BYTES

FORWARDED_ALLOW_IPS = "FORWARDED_ALLOW_IPS"
"""uvicorn's variable: the proxies whose X-Forwarded-For and X-Forwarded-Proto are believed."""
CONNECT_BACKOFF_SECONDS = 15.0
"""After a database's connect failed, its requests are 503 at once for this long, then one
tries again: a database that does not answer holds no thread for its connect timeout per
request (`tablequeue.connect`)."""


def run(settings: ApiSettings) -> None:
    json_logs.setup()
    auth = Auth(admin_token=settings.admin_token, read_token=settings.read_token)
    with contextlib.ExitStack() as stack:
        databases = {
            name: stack.enter_context(connect(url, connect_backoff_seconds=CONNECT_BACKOFF_SECONDS))
            for name, url in settings.database_urls().items()
        }
        app = create_app(databases, auth, listen_host=settings.host)
        uvicorn.run(
            app,
            host=settings.host,
            port=settings.port,
            log_level="info",
            log_config=None,  # uvicorn's records reach the root logger's JSON handler
            access_log=False,
            h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES,
            # The client's address (in the audit trail) is the connection's: X-Forwarded-For
            # counts only from the proxies FORWARDED_ALLOW_IPS names (uvicorn trusted loopback).
            proxy_headers=bool(os.environ.get(FORWARDED_ALLOW_IPS)),
        )
