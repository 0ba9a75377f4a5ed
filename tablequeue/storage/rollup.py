"""The chart rollup table, `tablequeue_rollup`: one row per queue and minute (database clock).

Columns: `processed` and `failed` (outcomes recorded that minute, added up by the workers), a
log-scale histogram of queue latency (`processed_at - process_after` of each success) as counts
in fixed buckets plus its sum and maximum, and samples taken by the workers: `first_id` and
`last_id` (the smallest and largest sample of the queue's highest message id, for enqueues) and
`backlog` (due messages). Rows older than
HORIZON are deleted in bounded batches (`prune`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from datetime import timedelta

import sqlalchemy as sa

from ..sqltypes import UtcDateTime

ROLLUP_TABLE = "tablequeue_rollup"
HORIZON = timedelta(days=8)
"""Rows older than this are deleted: a week of charts and a day of slack."""

BUCKET_BOUNDS: tuple[float, ...] = (
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500,
    1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000,
)  # fmt: skip
"""Upper bounds (seconds, inclusive) of the latency buckets, 1-2.5-5 per decade from 10 ms to
about 28 hours; one more bucket counts everything slower."""
BUCKETS = len(BUCKET_BOUNDS) + 1
BUCKET_COLUMNS = tuple(f"latency_b{n:02d}" for n in range(BUCKETS))
ADDED_UP = ("processed", "failed", "latency_sum", *BUCKET_COLUMNS)
"""Columns each write adds to (workers' counts)."""
LARGEST = ("latency_max", "last_id")
"""Columns that keep the larger of the stored and the written value."""
SMALLEST = ("first_id",)
"""Columns that keep the smaller of the stored and the written value."""
LATEST = ("backlog",)
"""Columns a write replaces, unless it has no value for them."""


def rollup_table(metadata: sa.MetaData) -> sa.Table:
    """The table, defined once per MetaData."""
    if ROLLUP_TABLE in metadata.tables:
        return metadata.tables[ROLLUP_TABLE]
    table = sa.Table(
        ROLLUP_TABLE,
        metadata,
        sa.Column("queue", sa.String(63), primary_key=True),
        sa.Column("minute", UtcDateTime(), primary_key=True),
        sa.Column("processed", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("failed", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("latency_sum", sa.Float(), nullable=False, server_default="0"),
        sa.Column("latency_max", sa.Float(), nullable=True),
        *(
            sa.Column(name, sa.BigInteger(), nullable=False, server_default="0")
            for name in BUCKET_COLUMNS
        ),
        sa.Column("first_id", sa.BigInteger(), nullable=True),
        sa.Column("last_id", sa.BigInteger(), nullable=True),
        sa.Column("backlog", sa.BigInteger(), nullable=True),
    )
    sa.Index(f"{ROLLUP_TABLE}_minute", table.c.minute)  # pruning, across queues
    return table


def ensure_rollup(connection: sa.Connection, metadata: sa.MetaData) -> None:
    """Create the table if it is missing (with the registry, under its DDL lock)."""
    rollup_table(metadata).create(connection, checkfirst=True)


def bucket_of(seconds: float) -> int:
    """The histogram bucket of a latency."""
    return bisect.bisect_left(BUCKET_BOUNDS, seconds)


def percentile(counts: Sequence[int], fraction: float, largest: float | None) -> float | None:
    """The latency below which `fraction` of the observations fall, from bucket counts
    (interpolated log-linearly inside the bucket, never above the largest observed); None
    without observations."""
    total = sum(counts)
    if not total:
        return None
    rank = fraction * total
    seen = 0
    for index, count in enumerate(counts):
        if count and seen + count >= rank:
            if index == len(BUCKET_BOUNDS):  # slower than the last bound
                return largest if largest is not None else BUCKET_BOUNDS[-1]
            high = BUCKET_BOUNDS[index]
            share = (rank - seen) / count
            if index == 0:
                value = high * share
            else:
                low = BUCKET_BOUNDS[index - 1]
                value = low * math.exp(share * math.log(high / low))
            return min(value, largest) if largest is not None else value
        seen += count
    return largest
