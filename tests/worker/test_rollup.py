"""The chart rollup written by real worker processes, on every engine: what two workers count
adds up to exactly what they did, latency lands in the histogram, the highest id moves with
the enqueues, and a worker stopped by SIGTERM writes its last counts before it exits."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from tablequeue import Database
from tablequeue.rollup import (
    BUCKET_BOUNDS,
    MinuteCounts,
    chart_series,
    minute_of,
    rollup_table,
)
from tablequeue.rollup.table import BUCKET_COLUMNS
from tablequeue.worker.rollup import Rollup
from tests.support.waiting import wait_until

from .helpers import FAST_POLL, SYNC, MakeQueue, StartWorker, enqueue, leased_message


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


def _sum(series: list[int | None]) -> int:
    return sum(value for value in series if value is not None)


def _enqueued_by_minute(charts: dict[str, Any], series: dict[str, Any]) -> dict[int, int]:
    return Counter({t: n for t, n in zip(charts["time"], series["enqueued"], strict=True) if n})


def _created_by_minute(database: Database, table: sa.Table) -> Counter[int]:
    """Minute (Unix seconds) -> messages created in it, of the rows in the table now."""
    with database.transaction() as connection:
        created = connection.execute(sa.select(table.c.created_at)).scalars()
        return Counter(int(minute_of(at).timestamp()) for at in created)


def test_two_workers_write_what_they_did_and_the_charts_show_it(
    make_queue: MakeQueue, database: Database, db_url: str, start_worker: StartWorker
) -> None:
    queue = make_queue("orders", max_attempts=1)
    first = enqueue(queue, [{"n": n} for n in range(3)])
    created = _created_by_minute(database, queue.table)  # the rows are deleted once processed
    options = ("--rollup-interval", "1", "--batch-size", "5", *FAST_POLL)
    workers = [start_worker("orders", db_url, SYNC, *options) for _ in range(2)]
    for worker in workers:
        worker.wait_ready()
    wait_until(lambda: _totals(database)["processed"] == 3, 60)
    database.pause("orders")  # the workers lease nothing while the new rows are read
    ids = enqueue(queue, [{"n": n} for n in range(40)] + [{"raise": "no stock"}] * 6)
    created += _created_by_minute(database, queue.table)
    database.resume("orders")
    wait_until(lambda: queue.count(status="Pending") == 0 and queue.count(status="Leased") == 0)
    assert queue.count(status="Error") == 6
    wait_until(lambda: _totals(database)["processed"] == 43 and _totals(database)["failed"] == 6)
    totals = _totals(database)
    assert totals["observed"] == 43  # one latency per success
    assert totals["last_id"] == max(ids)

    charts = chart_series(database, "1h", ["orders"])
    [orders] = charts["queues"]
    assert _sum(orders["processed"]) == 43 and _sum(orders["failed"]) == 6
    # Every message created is counted once, in the minute it was created (the first three
    # before any worker sampled the queue too), by the worker that leased it first.
    assert _sum(orders["enqueued"]) == len(first) + len(ids) == 49
    assert _enqueued_by_minute(charts, orders) == created
    assert any(p is not None for p in orders["latencyP50"])

    # A person retries the six in Error: run again, they are not enqueued again.
    queue.set_status("Pending", from_status="Error")
    wait_until(lambda: _totals(database)["failed"] == 12)
    orders = chart_series(database, "1h", ["orders"])["queues"][0]
    assert _sum(orders["enqueued"]) == 49
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


_REFUSE_DELETES = {
    "sqlite": [
        "CREATE TRIGGER refuse_delete BEFORE DELETE ON tablequeue_rollup"
        " BEGIN SELECT RAISE(ABORT, 'deletes refused'); END"
    ],
    "postgresql": [
        "CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql"
        " AS $$ BEGIN RAISE EXCEPTION 'deletes refused'; END $$",
        "CREATE TRIGGER refuse_delete BEFORE DELETE ON tablequeue_rollup"
        " FOR EACH ROW EXECUTE FUNCTION refuse_delete()",
    ],
    "mariadb": [
        "CREATE TRIGGER refuse_delete BEFORE DELETE ON tablequeue_rollup FOR EACH ROW"
        " SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'deletes refused'"
    ],
}


def test_a_failed_prune_does_not_count_the_written_minutes_again(
    make_queue: MakeQueue, database: Database
) -> None:
    """The counts are committed before the prune: a prune that fails (here a trigger refuses
    deletes, as a missing DELETE grant would) must not put them back for the next write."""
    queue = make_queue("orders")
    rollup_rows = rollup_table(database.metadata)
    with database.transaction() as connection:
        connection.execute(  # a row past the horizon: the prune has something to delete
            sa.insert(rollup_rows).values(
                queue="orders",
                minute=datetime(2000, 1, 1, tzinfo=UTC),
                processed=1,
                failed=0,
                latency_sum=0.0,
                **{column: 0 for column in BUCKET_COLUMNS},
            )
        )
        for statement in _REFUSE_DELETES[database.engine.dialect.name]:
            connection.exec_driver_sql(statement)
    rollup = Rollup(database, queue, interval=60)
    rollup.minutes[minute_of(datetime.now(UTC))] = MinuteCounts(processed=5)
    asyncio.run(rollup.write())  # written, then the prune fails
    asyncio.run(rollup.write())  # nothing new to add
    assert _totals(database)["processed"] == 1 + 5


def test_a_batch_counts_each_first_lease_in_the_minute_it_was_created() -> None:
    """A batch's messages come in lease order, not by creation: minutes interleave, and only
    messages leased for the first time count (a retried or re-run one was counted before)."""
    seconds = [59.9, 60.0, 30.0, 125.0, 60.5, 0.0, 119.999]
    start = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    batch = [leased_message(i, start + timedelta(seconds=s)) for i, s in enumerate(seconds)]
    batch.append(leased_message(99, start, attempts=2))  # its second attempt
    rollup = Rollup(None, None, interval=60)  # type: ignore[arg-type]  # no writes here
    rollup.leased(batch)
    enqueued = {minute: counts.enqueued for minute, counts in rollup.minutes.items()}
    minute = timedelta(minutes=1)
    assert enqueued == {start: 3, start + minute: 3, start + 2 * minute: 1}
    rollup.given_back([1, 99])  # given back unstarted: the next lease counts it again
    assert rollup.minutes[start + minute].enqueued == 2
