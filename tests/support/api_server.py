"""Serve the API over real HTTP from a thread for tests: uvicorn on a free loopback port."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import httpx
import uvicorn

from tablequeue.api import create_app
from tablequeue.api.auth import Auth
from tablequeue.database import Database
from tests.support.postgres_server import free_port
from tests.support.waiting import wait_until


@contextlib.contextmanager
def serve_api(database: Database, auth: Auth | None = None, **options: int) -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(
        create_app(database, auth, **options), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, timeout=30)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextlib.contextmanager
def api_client(
    database: Database, auth: Auth | None = None, **options: int
) -> Iterator[httpx.Client]:
    with (
        serve_api(database, auth, **options) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        yield client
