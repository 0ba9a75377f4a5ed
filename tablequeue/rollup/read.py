"""Reading the rollup as chart series: one value per step (a minute for the last hour, five
minutes for the last day, an hour for the last week) for each queue, and their total.

Counts are sums over the step; latency percentiles come from the step's merged histogram;
`backlog` is the last sample in the step; `enqueued` is how far the highest message id moved
since the previous sample (null where no process sampled the queue, or before its first
sample). Steps without rows have zero counts and null samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from ..errors import InvalidInput
from ..sqltypes import UtcDateTime
from ..storage.engine import Storage
from .table import BUCKET_COLUMNS, BUCKETS, percentile, rollup_table

WINDOWS: dict[str, tuple[int, int]] = {
    "1h": (3_600, 60),
    "24h": (86_400, 300),
    "7d": (604_800, 3_600),
}
"""Window name -> (its length, the step of its points), in seconds."""
PERCENTILES = {"latencyP50": 0.50, "latencyP90": 0.90, "latencyP99": 0.99}


@dataclass
class _Steps:
    """One queue's (or the total's) values per step."""

    n: int
    processed: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    buckets: list[list[int]] = field(default_factory=list)
    largest: list[float | None] = field(default_factory=list)
    first_id: list[int | None] = field(default_factory=list)
    last_id: list[int | None] = field(default_factory=list)
    backlog: list[int | None] = field(default_factory=list)
    enqueued: list[int | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.processed = [0] * self.n
        self.failed = [0] * self.n
        self.buckets = [[0] * BUCKETS for _ in range(self.n)]
        self.largest = [None] * self.n
        self.first_id = [None] * self.n
        self.last_id = [None] * self.n
        self.backlog = [None] * self.n
        self.enqueued = [None] * self.n

    def add_row(self, i: int, row: Any) -> None:
        self.processed[i] += row.processed
        self.failed[i] += row.failed
        stored = [int(row._mapping[column]) for column in BUCKET_COLUMNS]
        self.buckets[i] = [a + b for a, b in zip(self.buckets[i], stored, strict=True)]
        self.largest[i] = _larger(self.largest[i], row.latency_max)
        if row.last_id is not None:
            self.last_id[i] = max(self.last_id[i] or 0, int(row.last_id))
        if row.first_id is not None:
            first = self.first_id[i]
            self.first_id[i] = int(row.first_id) if first is None else min(first, row.first_id)
        if row.backlog is not None:
            self.backlog[i] = int(row.backlog)  # rows come in time order: the last one stays

    def derive_enqueued(self, before: int | None) -> None:
        running = before
        for i, highest in enumerate(self.last_id):
            if highest is None:
                continue
            if running is None:  # the first sample: from the smallest one of the step
                running = self.first_id[i]
            if running is not None:
                self.enqueued[i] = max(0, highest - running)
            running = highest if running is None else max(running, highest)

    def add(self, other: _Steps) -> None:
        for i in range(self.n):
            self.processed[i] += other.processed[i]
            self.failed[i] += other.failed[i]
            pairs = zip(self.buckets[i], other.buckets[i], strict=True)
            self.buckets[i] = [a + b for a, b in pairs]
            self.largest[i] = _larger(self.largest[i], other.largest[i])
            self.backlog[i] = _plus(self.backlog[i], other.backlog[i])
            self.enqueued[i] = _plus(self.enqueued[i], other.enqueued[i])

    def series(self) -> dict[str, list[Any]]:
        shown: dict[str, list[Any]] = {
            "enqueued": self.enqueued,
            "processed": self.processed,
            "failed": self.failed,
        }
        for name, fraction in PERCENTILES.items():
            shown[name] = [
                _rounded(percentile(counts, fraction, largest))
                for counts, largest in zip(self.buckets, self.largest, strict=True)
            ]
        shown["latencyMax"] = [_rounded(value) for value in self.largest]
        shown["backlog"] = self.backlog
        return shown


def _larger(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


def _plus(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def chart_series(
    storage: Storage, window: str, queues: Sequence[str] | None = None
) -> dict[str, Any]:
    """The chart series of `queues` (every queue with rows when None) over `window`."""
    if window not in WINDOWS:
        raise InvalidInput(f"unknown window {window!r}: expected one of {', '.join(WINDOWS)}")
    length, step = WINDOWS[window]
    rollup = rollup_table(storage.metadata)
    with storage.transaction() as connection:
        now = connection.execute(sa.select(sa.type_coerce(storage.dialect.now(), UtcDateTime())))
        clock: datetime = now.scalar_one()
        end = (int(clock.timestamp()) // step + 1) * step
        start = end - length
        start_at = datetime.fromtimestamp(start, UTC)
        chosen = sa.true() if queues is None else rollup.c.queue.in_(list(queues))
        if not sa.inspect(connection).has_table(rollup.name):  # no `apply` since upgrading
            return _shown(
                window,
                step,
                start,
                end,
                clock,
                {name: _Steps(length // step) for name in queues or ()},
            )
        rows = connection.execute(
            sa.select(rollup)
            .where(chosen, rollup.c.minute >= start_at)
            .order_by(rollup.c.queue, rollup.c.minute)
        ).all()
        before = dict(
            connection.execute(
                sa.select(rollup.c.queue, sa.func.max(rollup.c.last_id))
                .where(chosen, rollup.c.minute < start_at)
                .group_by(rollup.c.queue)
            ).all()
        )
    n = length // step
    names = sorted({row.queue for row in rows} | set(queues or ()))
    steps = {name: _Steps(n) for name in names}
    for row in rows:
        i = (int(row.minute.timestamp()) - start) // step
        if 0 <= i < n:
            steps[row.queue].add_row(i, row)
    for name, queue_steps in steps.items():
        queue_steps.derive_enqueued(before.get(name))
    return _shown(window, step, start, end, clock, steps)


def _shown(
    window: str, step: int, start: int, end: int, clock: datetime, steps: dict[str, _Steps]
) -> dict[str, Any]:
    n = (end - start) // step
    total = _Steps(n)
    for queue_steps in steps.values():
        total.add(queue_steps)
    names = sorted(steps)
    start_at = datetime.fromtimestamp(start, UTC)
    return {
        "window": window,
        "stepSeconds": step,
        "from": start_at.isoformat(),
        "to": datetime.fromtimestamp(end, UTC).isoformat(),
        "now": clock.isoformat(),
        "time": [start + i * step for i in range(n)],
        "queues": [{"queue": name, **steps[name].series()} for name in names],
        "total": total.series(),
    }
