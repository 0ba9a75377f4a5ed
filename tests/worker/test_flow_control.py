"""Real worker processes against a paused queue and a rate-limited one (every engine)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import sqlalchemy as sa

from tablequeue import Database
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_records

from .helpers import FAST_POLL, SYNC, MakeQueue, StartWorker, counter, enqueue, events

RATE, BURST = 4.0, 4


def database_now(database: Database) -> datetime:
    with database.transaction() as connection:
        now = connection.execute(
            sa.select(sa.type_coerce(database.dialect.now(), database.registry.c.paused_at.type))
        ).scalar_one()
    assert isinstance(now, datetime)
    return now


def test_a_paused_queue_worker_leases_nothing_stays_healthy_and_resumes(
    database: Database,
    make_queue: MakeQueue,
    db_url: str,
    start_worker: StartWorker,
    records: Path,
) -> None:
    queue = make_queue("orders", keep_processed_for="forever")
    before = enqueue(queue, [{"n": n} for n in range(3)])
    worker = start_worker("orders", db_url, SYNC, *FAST_POLL)
    worker.wait_ready()
    wait_until(lambda: queue.count(status="Processed") == len(before), timeout=60)

    database.pause("orders")
    during = enqueue(queue, [{"n": n} for n in range(20)])  # enqueue still works
    labels = {"queue": "orders"}
    # The worker has polled the paused queue (it says so) and is alive and ready meanwhile.
    wait_until(lambda: counter(worker, "tablequeue_worker_queue_paused", **labels) == 1, 60)
    assert worker.ready() and worker.get("/livez")[0] == 200
    assert worker.process.poll() is None
    assert queue.count(status="Pending") == len(during)
    assert not set(events(records, "start")) & set(during)
    assert any(line.get("message") == "queue paused: leasing nothing" for line in worker.logs())

    resumed_after = database_now(database)
    database.resume("orders")
    wait_until(lambda: queue.count(status="Processed") == len(before) + len(during), 60)
    # Nothing was leased while paused: every message of the pause started after the resume.
    started = [queue.get(i).started_at for i in during]
    assert all(at is not None and at >= resumed_after for at in started)
    assert sorted(events(records, "start")) == sorted(before + during)  # each once
    assert counter(worker, "tablequeue_worker_queue_paused", **labels) == 0


def test_workers_together_keep_to_the_rate_limit_and_drain_the_queue(
    database: Database,
    make_queue: MakeQueue,
    db_url: str,
    start_worker: StartWorker,
    records: Path,
) -> None:
    queue = make_queue(
        "orders",
        keep_processed_for="forever",
        rate_limit={"messagesPerSecond": RATE, "burst": BURST},
    )
    ids = enqueue(queue, [{"n": n} for n in range(48)])
    workers = [
        start_worker("orders", db_url, SYNC, "--batch-size", "10", "--concurrency", "8", *FAST_POLL)
        for _ in range(3)
    ]
    for worker in workers:
        worker.wait_ready()
    wait_until(lambda: queue.count(status="Processed") == len(ids), timeout=120)

    assert sorted(events(records, "start")) == sorted(ids)  # every message, once
    # The bound, in the database's own lease times: in any interval, at most
    # burst + rate * length leases (0.01 for the engines' rounding of stored times).
    times = sorted(m.started_at.timestamp() for m in queue.messages(limit=1000) if m.started_at)
    assert len(times) == len(ids)
    worst = 0.0
    for first in range(len(times)):
        for last in range(first, len(times)):
            count = last - first + 1
            allowed = BURST + RATE * (times[last] - times[first])
            worst = max(worst, count - allowed)
            assert count <= allowed + 0.01, (count, allowed, times[first], times[last])
    span = times[-1] - times[0]
    assert span >= (len(ids) - BURST) / RATE - 0.01  # follows from the bound: 11 s at least
    processes = {name for _, _, _, name in read_records(records)}
    throttled = sum(
        counter(w, "tablequeue_worker_throttled_total", queue="orders") for w in workers
    )
    print(f"{len(processes)} processes, {span:.2f}s, margin {worst:.3f}, {throttled} throttled")
    assert throttled > 0
