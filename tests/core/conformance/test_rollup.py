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
    assert sum(orders["processed"]) == 100
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
    assert sum(only["queues"][0]["processed"]) == 100
    with pytest.raises(InvalidInput, match="unknown window '2h'"):
        chart_series(database, "2h")


def test_enqueued_follows_the_highest_id_across_samples(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    _enqueue(queue, 2)
    clock = write_minutes(database, "orders", queue.table, {})
    minute = minute_of(clock)
    # Samples of earlier minutes, as workers that ran then would have written them.
    baseline = MinuteCounts()
    baseline.saw_id(100)
    moved = MinuteCounts()
    moved.saw_id(142)
    lower = MinuteCounts()
    lower.saw_id(120)  # a sample after the newest rows were deleted: never negative
    write_minutes(
        database,
        "orders",
        queue.table,
        {
            minute - timedelta(minutes=3): baseline,
            minute - timedelta(minutes=2): moved,
            minute - timedelta(minutes=1): lower,
        },
    )
    charts = chart_series(database, "1h", ["orders"])  # one call: one window, one time axis
    orders = charts["queues"][0]
    step = charts["time"].index(int(minute.timestamp()))
    assert orders["enqueued"][step - 3] is None  # the first sample: no baseline before it
    assert orders["enqueued"][step - 2] == 42
    assert orders["enqueued"][step - 1] == 0
    assert orders["enqueued"][step - 4] is None  # no sample at all


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
