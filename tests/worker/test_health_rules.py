"""The health rules a queue declares, proven with a real worker that puts a message in Error, on
every engine: the token-free `GET /queues/{name}/health` answers 503 Unhealthy by default,
200 Healthy with `whenErrors: Healthy`, and 200 Disabled (no reasons) with `enabled: false`;
re-applying the queue changes the answer at once, the message staying in Error throughout."""

from __future__ import annotations

from typing import Any

import httpx

from tablequeue import Database
from tablequeue.spec import QueueResource
from tests.support.api_server import api_client
from tests.support.waiting import wait_until

from .helpers import FAST_POLL, SYNC, MakeQueue, StartWorker, enqueue


def _health(client: httpx.Client) -> tuple[int, dict[str, Any]]:
    answer = client.get("/queues/orders/health")
    return answer.status_code, answer.json()


def _reapply(database: Database, **health: Any) -> None:
    database.apply(QueueResource.from_name("orders", health=health))


def test_when_errors_healthy_and_disabled_health_on_a_queue_with_errors(
    make_queue: MakeQueue, db_url: str, database: Database, start_worker: StartWorker
) -> None:
    queue = make_queue("orders", health={"when_errors": "Healthy"})
    [failed] = enqueue(queue, [{"permanent": "no price"}])
    start_worker("orders", db_url, SYNC, *FAST_POLL)
    wait_until(lambda: queue.get(failed).status == "Error", timeout=30)

    with api_client(database) as client:
        status, lenient = _health(client)
        assert (status, lenient["health"], lenient["reasons"]) == (200, "Healthy", [])

        _reapply(database)  # the default rule: errors make the queue Unhealthy
        status, strict = _health(client)
        assert (status, strict["health"]) == (503, "Unhealthy")
        assert strict["reasons"] == ["1 message(s) in Error"]

        _reapply(database, enabled=False)
        status, disabled = _health(client)
        assert (status, disabled["health"], disabled["reasons"]) == (200, "Disabled", [])
        assert disabled["backlog"] == 0  # the counts are still read and shown

    assert database.queue("orders").stats().counts.get("Error") == 1
