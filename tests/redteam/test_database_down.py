"""The open routes and a reader's requests while the database is down (issue 29): a clear 503
that says "database unavailable" and nothing of where the database lives (host, port, name, user,
driver). The API runs as `tablequeue api` does, with tokens; the PostgreSQL server is its own, so
the test can stop it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tablequeue import connect
from tablequeue.spec import QueueResource
from tests.support.api_server import api_process
from tests.support.postgres_server import PostgresServer, postgres_server

READ = {"Authorization": "Bearer read-secret"}
ADMIN = {"Authorization": "Bearer admin-secret"}
TOKENS = {"TABLEQUEUE_API_ADMIN_TOKEN": "admin-secret", "TABLEQUEUE_API_READ_TOKEN": "read-secret"}


@pytest.fixture
def server() -> Iterator[PostgresServer]:
    with postgres_server() as started:
        with connect(started.url) as database:
            database.apply(QueueResource.from_name("orders"))
            database.queue("orders").enqueue({"n": 1})
        yield started


def test_nothing_tells_where_the_database_lives_while_it_is_down(
    server: PostgresServer, tmp_path: Path
) -> None:
    with (
        api_process(server.url, tmp_path, TOKENS) as api,
        httpx.Client(base_url=api.base, timeout=60) as client,
    ):
        assert client.get("/readyz").status_code == 200
        server.stop("immediate")
        tracking = uuid.uuid4()
        requests = [
            ("GET", "/readyz", {}),
            ("GET", "/queues/orders/health", {}),
            ("GET", "/queues", READ),
            ("GET", "/queues/orders", READ),
            ("GET", "/queues/orders/messages", READ),
            ("GET", "/queues/orders/messages/1", READ),
            ("GET", f"/jobs/{tracking}", READ),
            ("GET", "/workers", READ),
            ("GET", "/queues/orders/schedules", READ),
            ("GET", "/charts", READ),
            ("GET", "/ui", READ),
            ("GET", "/ui/queues/orders", READ),
            ("POST", "/queues/orders/pause", ADMIN),
        ]
        secrets = ["127.0.0.1", str(server.port), "postgres", "psycopg", "Traceback", "connection"]
        for method, target, headers in requests:
            answer = client.request(method, target, headers=headers)
            assert answer.status_code == 503, (target, answer.status_code, answer.text[:300])
            assert "database unavailable" in answer.text, (target, answer.text[:300])
            told = [secret for secret in secrets if secret in answer.text]
            assert told == [], (target, told, answer.text[:300])
        assert client.get("/livez").status_code == 200
    log = (tmp_path / "api.log").read_text()
    assert f"127.0.0.1:{server.port}" in log  # the operator of the API is told, in its log
