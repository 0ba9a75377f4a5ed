"""The HTTP API's status writes ask the core's guard: a status that is neither built in, nor the
queue's default, nor held by a message of the queue (a typo such as `Pendng`) is a 400 naming it
and the known ones, unless the request says the status is new (`newStatus`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tablequeue import Database, connect
from tablequeue.spec import QueueResource
from tests.support.api_server import api_client

KNOWN = "Abandoned, Cancelled, Error, Expired, Pending, Processed, Sleeping"


@pytest.fixture
def database(sqlite_url: str) -> Iterator[Database]:
    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("orders"))
        database.queue("orders").enqueue({"n": 1})
        yield database


@pytest.fixture
def client(database: Database) -> Iterator[httpx.Client]:
    with api_client(database) as client:
        yield client


WRITES: list[tuple[str, str, Any, str]] = [
    ("POST", "/queues/orders", {"message": {"n": 2}, "status": "Pendng"}, "?newStatus=true"),
    (
        "POST",
        "/queues/orders",
        [{"message": 2}, {"message": 3, "status": "Pendng"}],
        "?newStatus=true",
    ),
    ("PATCH", "/queues/orders/messages/1", {"status": "Pendng"}, '"newStatus": true'),
    ("POST", "/queues/orders/status", {"status": "Pendng", "ids": [1]}, '"newStatus": true'),
    ("PUT", "/queues/orders/default-status", {"status": "Pendng"}, '"newStatus": true'),
]
IDS = ["enqueue", "enqueue a batch", "patch", "set status", "default status"]


@pytest.mark.parametrize(("method", "path", "body", "override"), WRITES, ids=IDS)
def test_a_status_nobody_knows_is_refused_with_the_closest_one(
    client: httpx.Client, database: Database, method: str, path: str, body: Any, override: str
) -> None:
    response = client.request(method, path, json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == (
        "status 'Pendng' is not a known status and no message of queue 'orders' has it; "
        f"did you mean 'Pending'? known: {KNOWN} ({override} sets it anyway)"
    )
    queue = database.queue("orders")
    assert (queue.count(), queue.count(status="Pendng")) == (1, 0)
    assert database.default_status_of("orders") == "Pending"


@pytest.mark.parametrize(("method", "path", "body", "override"), WRITES, ids=IDS)
def test_new_status_writes_it(
    client: httpx.Client, database: Database, method: str, path: str, body: Any, override: str
) -> None:
    if override.startswith("?"):
        response = client.request(method, path, json=body, params={"newStatus": "true"})
    else:
        response = client.request(method, path, json=body | {"newStatus": True})
    assert response.status_code in (200, 201), response.text
    held = database.queue("orders").count(status="Pendng")
    assert held == 1 or database.default_status_of("orders") == "Pendng"


def test_a_status_a_message_holds_needs_no_flag(client: httpx.Client) -> None:
    first = client.post("/queues/orders/status", json={"status": "Parked", "ids": [1]})
    assert first.status_code == 400
    assert client.post(
        "/queues/orders/status", json={"status": "Parked", "ids": [1], "newStatus": True}
    ).json() == {"changed": 1, "dryRun": False}
    again = client.post("/queues/orders", json={"message": 2, "status": "Parked"})
    assert again.status_code == 201, again.text
