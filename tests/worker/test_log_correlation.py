"""Log correlation: every line written while a handler runs names its message, whatever logger
wrote it, with several handlers running at once (asyncio tasks, and threads for sync handlers)."""

from __future__ import annotations

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
    # Two lease batches of two: messages of one batch share a correlation id, never a tracking id.
    assert len({m.correlation_id for m in stored.values()}) == 2

    lines = [line for line in worker.logs() if line.get("logger") == "app.orders"]
    assert len(lines) == 2 * TOGETHER, worker.log_tail()
    for line in lines:
        message = stored[line["n"]]
        assert line["message_id"] == message.id
        assert line["correlation_id"] == message.correlation_id
        assert line["tracking_id"] == str(message.tracking_id)
        assert line["queue"] == "orders" and "trace_id" not in line  # no trace context given
    # The worker's own lines outside handlers name no message.
    [started] = [line for line in worker.logs() if line["message"] == "worker started"]
    assert "tracking_id" not in started
