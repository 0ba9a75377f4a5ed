"""The chart rollup written by real worker processes, on every engine: what two workers count
adds up to exactly what they did, latency lands in the histogram, the highest id moves with
the enqueues, and a worker stopped by SIGTERM writes its last counts before it exits."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from tablequeue import Database
from tablequeue.rollup import BUCKET_BOUNDS, chart_series, rollup_table
from tests.support.waiting import wait_until

from .helpers import FAST_POLL, SYNC, MakeQueue, StartWorker, enqueue


def _totals(database: Database) -> dict[str, Any]:
    rollup = rollup_table(database.metadata)
    buckets = [rollup.c[f"latency_b{n:02d}"] for n in range(len(BUCKET_BOUNDS) + 1)]
    with database.transaction() as connection:
        row = connection.execute(
            sa.select(
                sa.func.coalesce(sa.func.sum(rollup.c.processed), 0),
                sa.func.coalesce(sa.func.sum(rollup.c.failed), 0),
                sa.func.coalesce(sa.func.sum(sum(buckets[1:], buckets[0])), 0),
                sa.func.max(rollup.c.last_id),
                sa.func.count(),
            ).where(rollup.c.queue == "orders")
        ).one()
    processed, failed, observed, last_id, rows = (int(v) if v is not None else None for v in row)
    return {
        "processed": processed,
        "failed": failed,
        "observed": observed,
        "last_id": last_id,
        "rows": rows,
    }


def test_two_workers_write_what_they_did_and_the_charts_show_it(
    make_queue: MakeQueue, database: Database, db_url: str, start_worker: StartWorker
) -> None:
    queue = make_queue("orders", max_attempts=1)
    first = enqueue(queue, [{"n": n} for n in range(3)])
    options = ("--rollup-interval", "1", "--batch-size", "5", *FAST_POLL)
    workers = [start_worker("orders", db_url, SYNC, *options) for _ in range(2)]
    for worker in workers:
        worker.wait_ready()
    wait_until(lambda: _totals(database)["processed"] == 3, 60)
    ids = enqueue(queue, [{"n": n} for n in range(40)] + [{"raise": "no stock"}] * 6)
    wait_until(lambda: queue.count(status="Pending") == 0 and queue.count(status="Leased") == 0)
    assert queue.count(status="Error") == 6
    wait_until(lambda: _totals(database)["processed"] == 43 and _totals(database)["failed"] == 6)
    totals = _totals(database)
    assert totals["observed"] == 43  # one latency per success
    assert totals["last_id"] == max(ids)

    charts = chart_series(database, "1h", ["orders"])
    [orders] = charts["queues"]
    assert sum(orders["processed"]) == 43 and sum(orders["failed"]) == 6
    enqueued = [n for n in orders["enqueued"] if n is not None]
    # Every id after the first sample (which saw the first three) is counted, once.
    assert sum(enqueued) == max(ids) - max(first) == 46
    assert any(p is not None for p in orders["latencyP50"])
    for worker in workers:
        worker.signal(signal.SIGTERM)
        assert worker.wait_exit() == 0
    assert _totals(database)["processed"] == 43  # nothing counted twice at shutdown


def test_sigterm_writes_the_last_counts(
    make_queue: MakeQueue, database: Database, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders")
    # An hour between writes: only the first write (at start) and the one at shutdown happen.
    worker = start_worker("orders", db_url, SYNC, "--rollup-interval", "3600", *FAST_POLL)
    worker.wait_ready()
    wait_until(lambda: _totals(database)["rows"] >= 1)
    enqueue(queue, [{"n": n} for n in range(10)])
    wait_until(lambda: queue.count(status="Pending") == 0 and queue.count(status="Leased") == 0)
    assert _totals(database)["processed"] == 0  # counted in memory only, so far
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit() == 0
    assert _totals(database)["processed"] == 10
    assert _totals(database)["observed"] == 10
