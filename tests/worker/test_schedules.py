"""Real worker processes fire a queue's schedule: the tick made due through the core API (never
by waiting for a minute boundary) is enqueued once and processed, with two workers racing."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from tablequeue import Database
from tests.support.waiting import wait_until

from .helpers import FAST_POLL, SYNC, MakeQueue, StartWorker, events

EVERY_MINUTE = {
    "name": "heartbeat",
    "cron": "* * * * *",
    "message": {"beat": "{{ tickUtc }}"},
    "messageId": "beat-{{ tickEpoch }}",
}


def test_workers_fire_a_due_tick_once_and_process_it(
    database: Database,
    make_queue: MakeQueue,
    db_url: str,
    start_worker: StartWorker,
    records: Path,
) -> None:
    queue = make_queue("beats", schedules=[EVERY_MINUTE], keep_processed_for="forever")
    options = ("--schedule-interval", "0.5", *FAST_POLL)
    workers = [start_worker("beats", db_url, SYNC, *options) for _ in range(2)]
    for worker in workers:
        worker.wait_ready()
    [before] = queue.schedules()
    assert before.fired == 0 and queue.count() == 0

    queue.set_next_tick("heartbeat")  # due now, by the database clock
    first = wait_until(lambda: queue.messages(status="Processed"), timeout=60)[0]
    tick = datetime.fromisoformat(first.message["beat"])
    assert first.message_id == f"beat-{int(tick.timestamp())}"
    assert first.headers is not None and first.headers["tablequeue-schedule"] == "heartbeat"
    assert tick <= first.created_at  # the tick is the stored next tick: now

    # Minute boundaries may pass meanwhile and fire their own ticks: whatever fired, every tick
    # was enqueued once (a second enqueue of its messageId would be version 2) and processed
    # once, and the schedule counted each.
    wait_until(lambda: queue.count(status="Pending") + queue.count(status="Leased") == 0, 60)
    messages = queue.messages()
    assert all(m.version == 1 and m.status == "Processed" for m in messages), messages
    done = events(records, "done")
    assert sorted(done) == sorted(m.id for m in messages)
    fired_rows = [
        line["message_row"]
        for worker in workers
        for line in worker.logs()
        if line.get("message") == "schedule fired"
    ]
    assert sorted(fired_rows) == sorted(m.id for m in messages)
    [after] = queue.schedules()
    assert after.fired >= len(messages) >= 1
    assert after.next_tick is not None and after.last_tick is not None
    assert after.next_tick > after.last_tick and after.next_tick.second == 0
    assert after.next_tick - after.last_tick <= timedelta(minutes=1)
