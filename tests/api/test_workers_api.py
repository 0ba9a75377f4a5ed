"""Workers and queue health over real HTTP, on every engine: `GET /workers`,
`GET /queues/{name}/workers` and the token-free `GET /queues/{name}/health`."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest
import sqlalchemy as sa

from tablequeue import Database, Failure, Queue, connect
from tablequeue.api.auth import Auth
from tablequeue.models import Heartbeat
from tablequeue.spec import QueueResource
from tests.support.api_server import api_client
from tests.support.ports import free_port
from tests.support.waiting import wait_until

MakeQueue = Callable[..., Queue]


def beat(database: Database, worker_id: str, queue: str = "orders") -> None:
    database.heartbeat(Heartbeat(worker_id, queue, f"pod-{worker_id}", 7, "0.1.0", 2.0, 1, 5, 2))


def make_stale(database: Database, worker_id: str) -> None:
    table = database.workers_table
    with database.transaction() as connection:
        connection.execute(
            sa.update(table)
            .where(table.c.worker_id == worker_id)
            .values(last_seen=database.dialect.seconds_from_now(sa.literal(-120.0)))
        )


@pytest.fixture
def client(database: Database, make_queue: MakeQueue) -> Iterator[httpx.Client]:
    make_queue("orders", category="Sales")
    make_queue("audit-log", category="Ops", health={"when_errors": "Degraded"})
    with api_client(database) as client:
        yield client


def test_workers_of_every_queue_and_of_one(client: httpx.Client, database: Database) -> None:
    assert client.get("/workers").json() == {"workers": [], "live": 0, "stale": 0}
    beat(database, "orders-1")
    beat(database, "orders-2")
    beat(database, "audit-1", "audit-log")
    make_stale(database, "orders-2")
    everything = client.get("/workers").json()
    assert (everything["live"], everything["stale"]) == (2, 1)
    by_id = {w["workerId"]: w for w in everything["workers"]}
    assert set(by_id) == {"orders-1", "orders-2", "audit-1"}
    first = by_id["orders-1"]
    assert first["queue"] == "orders" and first["state"] == "live"
    assert (first["host"], first["pid"], first["version"]) == ("pod-orders-1", 7, "0.1.0")
    assert (first["inFlight"], first["processed"], first["failed"]) == (1, 5, 2)
    assert first["heartbeatSeconds"] == 2.0 and first["staleAfterSeconds"] == 10.0
    assert first["startedAt"] <= first["lastSeen"]
    assert by_id["orders-2"]["state"] == "stale" and by_id["orders-2"]["secondsSinceSeen"] > 10

    orders = client.get("/queues/orders/workers").json()
    assert [w["workerId"] for w in orders["workers"]] == ["orders-1", "orders-2"]
    assert (orders["live"], orders["stale"]) == (1, 1)
    missing = client.get("/queues/nope/workers")
    assert missing.status_code == 404 and "nope" in missing.json()["error"]
    assert client.get("/queues/Not%20A%20Name/workers").status_code == 400
    assert "/workers" in client.get("/openapi.json").json()["paths"]


def test_health_is_200_while_healthy_and_503_with_reasons_when_not(
    client: httpx.Client, database: Database
) -> None:
    healthy = client.get("/queues/orders/health")
    assert healthy.status_code == 200
    assert healthy.json() == {
        "queue": "orders",
        "health": "Healthy",
        "reasons": [],
        "backlog": 0,
        "oldestPendingSeconds": 0.0,
        "workers": {"live": 0, "stale": 0},
    }
    for name in ("orders", "audit-log"):
        queue = database.queue(name)
        queue.enqueue({"n": 1})
        [message] = queue.lease("w1", 1).messages
        queue.fail("w1", [Failure(message, "no price", True)])
    broken = client.get("/queues/orders/health")
    assert broken.status_code == 503
    assert broken.json()["health"] == "Unhealthy"
    assert broken.json()["reasons"] == ["1 message(s) in Error"]
    degraded = client.get("/queues/audit-log/health")  # whenErrors: Degraded still serves
    assert degraded.status_code == 200 and degraded.json()["health"] == "Degraded"
    assert client.get("/queues/nope/health").status_code == 404


def test_health_wants_a_live_worker_while_messages_wait(
    database: Database, client: httpx.Client
) -> None:
    database.apply(
        QueueResource.from_name(
            "mail", health={"no_workers_after_seconds": 1}, workers={"batch_size": 5}
        )
    )
    assert client.get("/queues/mail/health").status_code == 200  # nothing due, no worker
    database.queue("mail").enqueue({"to": "ann@example.com"})
    waiting = wait_until(
        lambda: (r := client.get("/queues/mail/health")).status_code == 503 and r, timeout=30
    )
    [reason] = waiting.json()["reasons"]
    assert reason.startswith("no live worker heartbeats; oldest due message waited")
    beat(database, "mail-1", "mail")
    answer = client.get("/queues/mail/health")
    assert answer.status_code == 200 and answer.json()["workers"] == {"live": 1, "stale": 0}
    make_stale(database, "mail-1")
    stale = client.get("/queues/mail/health")
    assert stale.status_code == 503 and stale.json()["workers"] == {"live": 0, "stale": 1}


def test_health_needs_no_token_and_workers_do(database: Database, make_queue: MakeQueue) -> None:
    make_queue("orders")
    beat(database, "orders-1")
    auth = Auth(admin_token="admin-secret", read_token="read-secret")
    with api_client(database, auth) as client:
        assert client.get("/queues/orders/health").status_code == 200
        assert client.get("/workers").status_code == 401
        assert client.get("/queues/orders/workers").status_code == 401
        reader = {"Authorization": "Bearer read-secret"}
        assert client.get("/workers", headers=reader).json()["live"] == 1
        assert client.get("/queues/orders/workers", headers=reader).status_code == 200


def test_health_of_an_unreachable_database_is_503_without_its_address() -> None:
    url = f"postgresql://tq:secret@127.0.0.1:{free_port()}/gone"
    with connect(url) as database, api_client(database) as client:
        answer = client.get("/queues/orders/health")
    assert answer.status_code == 503
    assert answer.json()["reasons"] == ["database unavailable"]
    assert "127.0.0.1" not in answer.text and "gone" not in answer.text
