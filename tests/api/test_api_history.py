"""Job history over real HTTP, on every engine: `GET /jobs/{trackingId}` after the row is
gone, and `GET /queues/{name}/messages/{id}/attempts`."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from tablequeue import Completion, Database, Failure, Queue
from tests.support.api_server import api_client

MakeQueue = Callable[..., Queue]


@pytest.fixture
def client(database: Database, make_queue: MakeQueue) -> Iterator[httpx.Client]:
    make_queue("orders", max_attempts=2, retry={"delay_seconds": 0})
    with api_client(database) as client:
        yield client


def test_a_job_is_found_after_its_row_was_deleted_on_success(
    client: httpx.Client, database: Database
) -> None:
    [r] = client.post("/queues/orders", json={"message": {"n": 1}}).json()["results"]
    queue = database.queue("orders")
    before = client.get(f"/jobs/{r['trackingId']}").json()
    assert (before["source"], before["status"]) == ("queue", "Pending")
    [m] = queue.lease("w1", 1).messages
    queue.complete("w1", [Completion(m, result={"receipt": "R-1"}, progress=100)])
    assert queue.count() == 0
    job = client.get(f"/jobs/{r['trackingId']}")
    assert job.status_code == 200
    body = job.json()
    assert body["source"] == "results" and body["queue"] == "orders"
    assert (body["status"], body["result"], body["attempts"]) == (
        "Processed",
        {"receipt": "R-1"},
        1,
    )
    assert body["id"] == r["id"] and body["trackingId"] == r["trackingId"]
    assert body["processedAt"] is not None and body["progress"] is None
    # Cancelling a finished job whose row is gone: the row is what a cancel changes.
    assert client.post(f"/jobs/{r['trackingId']}/cancel").status_code == 404


def test_attempts_of_a_message(client: httpx.Client, database: Database) -> None:
    [r] = client.post("/queues/orders", json={"message": {"n": 1}}).json()["results"]
    url = f"/queues/orders/messages/{r['id']}/attempts"
    assert client.get(url).json() == {"items": []}
    queue = database.queue("orders")
    for n, owner in enumerate(["w1", "w2"]):
        [m] = queue.lease(owner, 1, correlation_id=f"batch-{n}").messages
        queue.fail(owner, [Failure(m, f"timeout {n}")])
    items = client.get(url).json()["items"]
    assert [(i["attempt"], i["kind"], i["owner"], i["leaseBatchId"]) for i in items] == [
        (1, "failure", "w1", "batch-0"),
        (2, "failure", "w2", "batch-1"),
    ]
    assert [i["error"] for i in items] == ["timeout 0", "timeout 1"]
    assert all(i["at"] for i in items)
    job = client.get(f"/jobs/{r['trackingId']}").json()
    assert (job["source"], job["status"], job["lastError"]) == ("queue", "Error", "timeout 1")


def test_attempts_of_a_missing_message_is_404(client: httpx.Client) -> None:
    missing = client.get("/queues/orders/messages/987654/attempts")
    assert missing.status_code == 404 and "no message with id 987654" in missing.json()["error"]
    assert client.get("/queues/nope/messages/1/attempts").status_code == 404
    assert client.get("/queues/orders/messages/x/attempts").status_code == 422
