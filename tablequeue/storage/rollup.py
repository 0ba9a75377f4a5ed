"""The chart rollup table, `tablequeue_rollup`: one row per queue and minute (database clock).

Columns: `processed` and `failed` (outcomes recorded that minute, added up by the workers), a
log-scale histogram of queue latency (`processed_at - process_after` of each success) as counts
in fixed buckets plus its sum and maximum, `enqueued` (messages *created* that minute that a
worker leased for the first time, added up by the workers; the ones never leased are counted in
the queue table when read), and samples taken by the workers: `last_id` (the queue's highest
message id, which bounds that count) and `backlog` (due messages). Rows older than HORIZON are
deleted in bounded batches (`prune`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from datetime import timedelta

import sqlalchemy as sa

from .schema import BUCKET_BOUNDS, BUCKET_COLUMNS, add_missing_columns, rollup_table

HORIZON = timedelta(days=8)
"""Rows older than this are deleted: a week of charts and a day of slack."""

ADDED_UP = ("processed", "failed", "latency_sum", *BUCKET_COLUMNS, "enqueued")
"""Columns each write adds to (workers' counts)."""
LARGEST = ("latency_max", "last_id")
"""Columns that keep the larger of the stored and the written value."""
LATEST = ("backlog",)
"""Columns a write replaces, unless it has no value for them."""


def ensure_rollup(connection: sa.Connection, metadata: sa.MetaData) -> None:
    """Create the table if it is missing, or add the columns one made by an older tablequeue
    lacks (with the registry, under its DDL lock)."""
    table = rollup_table(metadata)
    table.create(connection, checkfirst=True)
    add_missing_columns(connection, table, ADDED_COLUMNS)


ADDED_COLUMNS = ("enqueued",)
"""Columns added after 0.1.0 (nullable: NULL in the rows written before)."""


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
