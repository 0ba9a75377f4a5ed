"""The chart rollup's storage (`tablequeue.rollup`): additive upserts by queue and minute,
samples that keep the larger id and the latest backlog, series with percentiles, and pruning in
bounded batches past the horizon.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from tablequeue import Database, NewMessage, Queue
from tablequeue.errors import InvalidInput
from tablequeue.rollup import (
    BUCKET_BOUNDS,
    HORIZON,
    MinuteCounts,
    chart_series,
    minute_of,
    percentile,
    prune,
    rollup_table,
    write_minutes,
)

from .helpers import MakeQueue


def _counts(processed: int, failed: int, latencies: list[float]) -> MinuteCounts:
    counts = MinuteCounts(processed=processed, failed=failed)
    for latency in latencies:
        counts.observe(latency)
    return counts


def _enqueue(queue: Queue, n: int) -> list[int]:
    done = queue.enqueue_many([NewMessage(message={"n": i}) for i in range(n)])
    return [e.id for e in done if e.id is not None]


def _rows(database: Database) -> list[sa.Row[object]]:
    rollup = rollup_table(database.metadata)
    with database.transaction() as connection:
        return list(connection.execute(sa.select(rollup).order_by(rollup.c.minute)).all())


def test_writes_add_up_per_minute_and_sample_the_queue(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    ids = _enqueue(queue, 5)
    clock = write_minutes(database, "orders", queue.table, {})
    minute = minute_of(clock)
    [row] = _rows(database)
    assert (row.queue, row.minute, row.processed, row.failed) == ("orders", minute, 0, 0)
    assert (row.last_id, row.backlog) == (max(ids), 5)

    # Two processes write the same minute: counts add up, the larger max stays.
    earlier = minute - timedelta(minutes=1)
    write_minutes(database, "orders", queue.table, {earlier: _counts(3, 1, [0.2, 4.0, 30.0])})
    write_minutes(database, "orders", queue.table, {earlier: _counts(2, 0, [0.3, 0.004])})
    queue.lease("w1", 2)  # backlog 3 now; the highest id stays
    later = write_minutes(database, "orders", queue.table, {})
    rows = {row.minute: row for row in _rows(database)}
    old = rows[earlier]
    assert (old.processed, old.failed, old.latency_max) == (5, 1, 30.0)
    assert old.latency_sum == pytest.approx(34.504)
    assert old.backlog is None and old.last_id is None  # no sample that minute
    buckets = [old._mapping[f"latency_b{n:02d}"] for n in range(len(BUCKET_BOUNDS) + 1)]
    assert sum(buckets) == 5
    assert [n for n, count in enumerate(buckets) if count] == [0, 4, 5, 8, 11]
    now_row = rows[minute_of(later)]
    assert (now_row.backlog, now_row.last_id) == (3, max(ids))


def test_series_per_step_with_percentiles_enqueued_and_backlog(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    other = make_queue("audit-log")
    _enqueue(queue, 3)
    clock = write_minutes(database, "orders", queue.table, {})
    minute = minute_of(clock)
    _enqueue(queue, 7)
    latencies = [0.1] * 90 + [2.0] * 9 + [60.0]
    # This write samples the backlog of 10 into its own minute: a minute may have begun.
    later = write_minutes(database, "orders", queue.table, {minute: _counts(100, 4, latencies)})
    write_minutes(database, "audit-log", other.table, {minute: _counts(10, 0, [0.1] * 10)})

    charts = chart_series(database, "1h")
    assert charts["window"] == "1h" and charts["stepSeconds"] == 60
    assert len(charts["time"]) == 60
    assert charts["time"][1] - charts["time"][0] == 60
    step = charts["time"].index(int(minute.timestamp()))
    sampled = charts["time"].index(int(minute_of(later).timestamp()))
    by_queue = {q["queue"]: q for q in charts["queues"]}
    assert sorted(by_queue) == ["audit-log", "orders"]
    orders = by_queue["orders"]
    assert all(len(series) == 60 for series in orders.values() if isinstance(series, list))
    assert orders["processed"][step] == 100 and orders["failed"][step] == 4
    assert _measured(orders["processed"]) == 100
    assert orders["backlog"][sampled] == 10
    p50, p90, p99 = (orders[f"latencyP{p}"][step] for p in (50, 90, 99))
    assert 0.05 < p50 <= 0.1 and 0.05 < p90 <= 0.1 and 1.0 < p99 <= 2.5
    assert orders["latencyMax"][step] == 60.0
    total = charts["total"]
    assert total["processed"][step] == 110 and total["backlog"][sampled] == 10
    assert total["latencyP50"][step] <= 0.1

    only = chart_series(database, "24h", ["orders"])
    assert [q["queue"] for q in only["queues"]] == ["orders"]
    assert only["stepSeconds"] == 300 and len(only["time"]) == 288
    assert _measured(only["queues"][0]["processed"]) == 100
    with pytest.raises(InvalidInput, match="unknown window '2h'"):
        chart_series(database, "2h")


def _measured(series: list[int | None]) -> int:
    return sum(value for value in series if value is not None)


def test_no_data_is_null_and_enqueued_counts_what_was_created(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    ids = _enqueue(queue, 5)
    clock = write_minutes(database, "orders", queue.table, {})
    minute = minute_of(clock)
    charts = chart_series(database, "1h", ["orders"])
    [orders] = charts["queues"]
    step = charts["time"].index(int(minute.timestamp()))
    # Before the queue existed: nothing, not zeros; since: what was created, never leased yet.
    assert orders["enqueued"][: step - 1] == [None] * (step - 1)
    assert _measured(orders["enqueued"]) == 5
    assert orders["processed"][: step - 1] == [None] * (step - 1)  # no worker counted then
    assert orders["processed"][step] == 0 and orders["backlog"][step] == 5  # a worker sampled

    # Two are leased: the worker that leased them counts them in the minute they were created
    # (the table counts only the ones never leased).
    leased = queue.lease("w1", 2).messages
    created = minute_of(leased[0].created_at)
    write_minutes(database, "orders", queue.table, {created: MinuteCounts(enqueued=2)})
    _enqueue(queue, 1)
    orders = chart_series(database, "1h", ["orders"])["queues"][0]
    assert _measured(orders["enqueued"]) == 6 == len(ids) + 1

    # A message deleted before any lease is no longer counted (the leased ones stay counted).
    queue.delete(ids[-1])
    orders = chart_series(database, "1h", ["orders"])["queues"][0]
    assert _measured(orders["enqueued"]) == 5


def test_an_older_rollup_table_is_read_then_migrated_by_apply(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    created = minute_of(queue.get(_enqueue(queue, 2)[0]).created_at)
    with database.transaction() as connection:  # as made by 0.1.0: no `enqueued` column
        connection.exec_driver_sql("ALTER TABLE tablequeue_rollup DROP COLUMN enqueued")
    with database.transaction() as connection:
        rollup = rollup_table(database.metadata)
        connection.execute(
            rollup.insert().values(
                queue="orders", minute=created, processed=1, failed=0, latency_sum=0, backlog=2
            )
        )
    orders = chart_series(database, "1h", ["orders"])["queues"][0]
    assert _measured(orders["processed"]) == 1 and _measured(orders["enqueued"]) == 2
    make_queue()  # apply again: the column is added, NULL in the row written before
    write_minutes(database, "orders", queue.table, {created: MinuteCounts(enqueued=1)})
    row = next(row for row in _rows(database) if row.minute == created)
    assert row.enqueued == 1 and row.processed == 1


def test_prune_deletes_rows_past_the_horizon_in_bounded_batches(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    clock = write_minutes(database, "orders", queue.table, {})
    minute = minute_of(clock)
    old = {
        minute - HORIZON - timedelta(minutes=m): MinuteCounts(processed=1) for m in range(1, 150)
    }
    kept = {minute - HORIZON + timedelta(minutes=5): MinuteCounts(processed=1)}
    write_minutes(database, "orders", queue.table, old | kept)
    assert len(_rows(database)) == 151
    assert prune(database, now=clock) == 149
    assert {row.minute for row in _rows(database)} == {minute, *kept}
    assert prune(database, now=clock) == 0


def test_percentile_from_buckets() -> None:
    assert percentile([0] * (len(BUCKET_BOUNDS) + 1), 0.5, None) is None
    counts = [0] * (len(BUCKET_BOUNDS) + 1)
    counts[-1] = 1  # slower than the last bound: the largest observed
    assert percentile(counts, 0.99, 200_000.0) == 200_000.0
    counts = [0] * (len(BUCKET_BOUNDS) + 1)
    counts[6] = 10  # (0.5, 1]
    value = percentile(counts, 0.5, 0.9)
    assert value is not None and 0.5 < value <= 0.9
