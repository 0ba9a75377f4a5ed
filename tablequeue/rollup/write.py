"""Writing the rollup: what a worker counted in memory, one upsert per minute it has counts
for, with the samples (highest id, backlog) taken in the same transaction; and pruning."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from ..sqltypes import UtcDateTime
from ..storage.engine import Storage
from .table import (
    ADDED_UP,
    BUCKET_BOUNDS,
    BUCKET_COLUMNS,
    BUCKETS,
    HORIZON,
    LARGEST,
    LATEST,
    ROLLUP_TABLE,
    bucket_of,
    rollup_table,
)

PRUNE_STEP = timedelta(hours=1)
"""One delete removes at most this much time of rows (an hour: 60 rows per queue)."""
PRUNE_ROUNDS = 24


@dataclass
class MinuteCounts:
    """What one process counted for one minute of one queue."""

    processed: int = 0
    failed: int = 0
    latency_sum: float = 0.0
    latency_max: float | None = None
    buckets: list[int] = field(default_factory=lambda: [0] * BUCKETS)
    enqueued: int = 0
    """Messages created this minute leased for the first time (less those given back)."""
    last_id: int | None = None

    def observe(self, latency: float) -> None:
        latency = max(latency, 0.0)
        self.buckets[bucket_of(latency)] += 1
        self.latency_sum += latency
        if self.latency_max is None or latency > self.latency_max:
            self.latency_max = latency

    def observe_many(self, latencies: list[float]) -> None:
        """`observe` each latency (a batch of outcomes at once: one call, not one per message)."""
        if not latencies:
            return
        latencies = [latency if latency > 0.0 else 0.0 for latency in latencies]
        buckets, bounds = self.buckets, BUCKET_BOUNDS
        for latency in latencies:
            buckets[bisect_left(bounds, latency)] += 1
        self.latency_sum += sum(latencies)
        self.observe_max(max(latencies))

    def sampled(self, highest: int) -> None:
        """The table's highest id, read now."""
        if self.last_id is None or highest > self.last_id:
            self.last_id = highest

    def merge(self, other: MinuteCounts) -> None:
        self.processed += other.processed
        self.failed += other.failed
        self.latency_sum += other.latency_sum
        if other.latency_max is not None:
            self.observe_max(other.latency_max)
        self.buckets = [a + b for a, b in zip(self.buckets, other.buckets, strict=True)]
        self.enqueued += other.enqueued
        if other.last_id is not None:
            self.sampled(other.last_id)

    def observe_max(self, latency: float) -> None:
        if self.latency_max is None or latency > self.latency_max:
            self.latency_max = latency

    def row(self, queue: str, minute: datetime, backlog: int | None) -> dict[str, Any]:
        values: dict[str, Any] = {
            "queue": queue,
            "minute": minute,
            "processed": self.processed,
            "failed": self.failed,
            "latency_sum": self.latency_sum,
            "latency_max": self.latency_max,
            "last_id": self.last_id,
            "backlog": backlog,
            "enqueued": self.enqueued,
        }
        values.update(zip(BUCKET_COLUMNS, self.buckets, strict=True))
        return values


def minute_of(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def write_minutes(
    storage: Storage,
    queue: str,
    table: sa.Table,
    minutes: dict[datetime, MinuteCounts],
    backlog: int | None = None,
) -> datetime:
    """Add `minutes` to the rollup and sample the queue (its highest id and its backlog, unless
    the caller just counted it) into the current minute, in one transaction; the database's
    clock."""
    rollup = rollup_table(storage.metadata)
    dialect = storage.dialect
    with storage.transaction() as connection:
        now, highest = connection.execute(
            sa.select(sa.type_coerce(dialect.now(), UtcDateTime()), sa.func.max(table.c.id))
        ).one()
        if backlog is None:
            backlog, _, _ = dialect.backlog(connection, storage.queries(table))
        current = minute_of(now)
        pending = dict(minutes)
        sample = pending.setdefault(current, MinuteCounts())
        if highest is not None:
            sample = MinuteCounts(**{**sample.__dict__, "buckets": list(sample.buckets)})
            sample.sampled(int(highest))
            pending[current] = sample
        for minute in sorted(pending):
            counts = pending[minute]
            row = counts.row(queue, minute, backlog if minute == current else None)
            connection.execute(
                dialect.accumulate(rollup, row, add=ADDED_UP, largest=LARGEST, latest=LATEST)
            )
    assert isinstance(now, datetime)
    return now


def prune(storage: Storage, now: datetime | None = None) -> int:
    """Delete rollup rows older than HORIZON (every queue's), an hour of rows per statement and
    transaction, at most PRUNE_ROUNDS statements a call; the number deleted."""
    rollup = rollup_table(storage.metadata)
    deleted = 0
    for _ in range(PRUNE_ROUNDS):
        with storage.transaction() as connection:
            clock, oldest = connection.execute(
                sa.select(
                    sa.type_coerce(storage.dialect.now(), UtcDateTime()),
                    sa.func.min(rollup.c.minute),
                )
            ).one()
            cutoff = (now or clock) - HORIZON
            if oldest is None or oldest >= cutoff:
                return deleted
            upper = min(cutoff, oldest + PRUNE_STEP)
            deleted += connection.execute(sa.delete(rollup).where(rollup.c.minute < upper)).rowcount
    return deleted


__all__ = ["ROLLUP_TABLE", "MinuteCounts", "minute_of", "prune", "write_minutes"]
