"""Log correlation: every line written while a handler runs names its message, whatever logger
wrote it, with several handlers running at once (asyncio tasks, and threads for sync handlers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.waiting import wait_until

from .helpers import FAST_POLL, MakeQueue, StartWorker, all_messages, enqueue, events

TOGETHER = 4


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_lines_of_concurrent_handlers_carry_their_own_message(
    kind: str, make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")
    ids = enqueue(queue, [{"n": n, "together": TOGETHER} for n in range(TOGETHER)])
    handler = "python:tests.support.worker_handlers:log_together"
    if kind == "async":
        handler += "_async"
    worker = start_worker(
        "orders", db_url, handler, *FAST_POLL, "--concurrency", str(TOGETHER), "--batch-size", "2"
    )
    wait_until(lambda: sorted(events(records, "done")) == sorted(ids), timeout=60)
    wait_until(lambda: queue.count(status="Processed") == TOGETHER, timeout=30)
    stored = {m.message["n"]: m for m in all_messages(queue).values()}
    # Two lease batches of two: messages of one batch share a lease batch id, never a tracking id.
    assert len({m.correlation_id for m in stored.values()}) == 2

    lines = [line for line in worker.logs() if line.get("logger") == "app.orders"]
    assert len(lines) == 2 * TOGETHER, worker.log_tail()
    for line in lines:
        message = stored[line["n"]]
        assert line["message_id"] == message.id
        assert line["lease_batch_id"] == message.correlation_id
        assert "correlation_id" not in line and "label" not in line  # none given
        assert line["tracking_id"] == str(message.tracking_id)
        assert line["queue"] == "orders" and "trace_id" not in line  # no trace context given
    # The worker's own lines outside handlers name no message.
    [started] = [line for line in worker.logs() if line["message"] == "worker started"]
    assert "tracking_id" not in started


def test_the_handler_and_its_lines_see_the_caller_s_correlation_id_and_label(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")
    [given] = enqueue(queue, [{"n": 1}], correlation_id="checkout-77", label="Order A-77")
    [plain] = enqueue(queue, [{"n": 2}])
    handler = "python:tests.support.worker_handlers:context_seen"
    worker = start_worker("orders", db_url, handler, *FAST_POLL)
    wait_until(lambda: queue.count(status="Processed") == 2, timeout=60)
    stored = all_messages(queue)
    seen = {
        line["id"]: line
        for line in map(json.loads, (records / "context.jsonl").read_text().splitlines())
    }
    assert seen[given] == {
        "id": given,
        "correlation_id": "checkout-77",
        "label": "Order A-77",
        "lease_batch_id": stored[given].correlation_id,
    }
    assert stored[given].correlation_id is not None  # the lease batch's, a different id
    assert (seen[plain]["correlation_id"], seen[plain]["label"]) == (None, None)

    lines = {
        line["message_id"]: line
        for line in worker.logs()
        if line.get("message") == "app saw its context"
    }
    assert lines[given]["correlation_id"] == "checkout-77"
    assert lines[given]["label"] == "Order A-77"
    assert lines[given]["lease_batch_id"] == stored[given].correlation_id
    assert "correlation_id" not in lines[plain] and "label" not in lines[plain]
