"""Reading the rollup as chart series: one value per step (a minute for the last hour, five
minutes for the last day, an hour for the last week) for each queue, and their total.

Counts are sums over the step; latency percentiles come from the step's merged histogram;
`backlog` is the last sample in the step. Nothing measured is null, never 0: `processed`,
`failed` and `backlog` where no worker wrote, everything before the queue existed.
`enqueued` counts the messages created in the step: the ones leased since (each counted by the
worker that leased it first) and the ones still waiting for their first lease (counted in the
queue table now), so it is known for every step since the queue was made.
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
from .unleased import created_per_step

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
    processed: list[int | None] = field(default_factory=list)
    failed: list[int | None] = field(default_factory=list)
    buckets: list[list[int]] = field(default_factory=list)
    largest: list[float | None] = field(default_factory=list)
    backlog: list[int | None] = field(default_factory=list)
    enqueued: list[int | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.processed = [None] * self.n
        self.failed = [None] * self.n
        self.buckets = [[0] * BUCKETS for _ in range(self.n)]
        self.largest = [None] * self.n
        self.backlog = [None] * self.n
        self.enqueued = [None] * self.n

    def add_row(self, i: int, row: Any) -> None:
        if row.backlog is not None or row.processed or row.failed:  # a worker counted then
            self.processed[i] = (self.processed[i] or 0) + row.processed
            self.failed[i] = (self.failed[i] or 0) + row.failed
        stored = [int(row._mapping[column]) for column in BUCKET_COLUMNS]
        self.buckets[i] = [a + b for a, b in zip(self.buckets[i], stored, strict=True)]
        self.largest[i] = _larger(self.largest[i], row.largest)
        if row.backlog is not None:
            self.backlog[i] = int(row.backlog)  # rows come in time order: the last one stays
        if row.enqueued:
            self.enqueued[i] = (self.enqueued[i] or 0) + int(row.enqueued)

    def count_enqueued(self, first_step: int, unleased: Sequence[int]) -> None:
        """Add the messages not leased yet to the leased ones, from the step the queue was made
        in (the steps before stay null)."""
        for i in range(self.n):
            if i >= first_step:
                self.enqueued[i] = (self.enqueued[i] or 0) + unleased[i]
            else:
                self.enqueued[i] = None

    def add(self, other: _Steps) -> None:
        for i in range(self.n):
            self.processed[i] = _plus(self.processed[i], other.processed[i])
            self.failed[i] = _plus(self.failed[i], other.failed[i])
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
    n = length // step
    rollup = rollup_table(storage.metadata)
    with storage.transaction() as connection:
        now = connection.execute(sa.select(sa.type_coerce(storage.dialect.now(), UtcDateTime())))
        clock: datetime = now.scalar_one()
        end = (int(clock.timestamp()) // step + 1) * step
        start = end - length
        start_at = datetime.fromtimestamp(start, UTC)
        present = {c["name"] for c in sa.inspect(connection).get_columns(rollup.name)}
        rows: Sequence[Any] = ()
        before: dict[str, int] = {}
        if present:  # else no `apply` since upgrading: nothing written yet
            chosen = sa.true() if queues is None else rollup.c.queue.in_(list(queues))
            rows = connection.execute(
                sa.select(*_read_columns(rollup, present))
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
        names = sorted({row.queue for row in rows} | set(queues or ()))
        steps = {name: _Steps(n) for name in names}
        for row in rows:
            i = (int(row.minute.timestamp()) - start) // step
            if 0 <= i < n:
                steps[row.queue].add_row(i, row)
        made = _created(storage, connection, names)
        for name, queue_steps in steps.items():
            if name not in made:  # no longer in the registry: only what was written
                continue
            table_name, created_at = made[name]
            table = storage.table(table_name)
            unleased = created_per_step(connection, table, start, step, n, before.get(name))
            first_step = (int(created_at.timestamp()) - start) // step
            queue_steps.count_enqueued(first_step, unleased)
    return _shown(window, step, start, end, clock, steps)


def _read_columns(rollup: sa.Table, present: set[str]) -> list[sa.ColumnElement[Any]]:
    """The rollup's columns as read: `largest` for latency_max; `enqueued` NULL in a table not
    migrated yet (made before 0.1.0's successor, no `apply` since)."""
    columns: list[sa.ColumnElement[Any]] = [
        rollup.c.queue,
        rollup.c.minute,
        rollup.c.processed,
        rollup.c.failed,
        rollup.c.latency_max.label("largest"),
        rollup.c.backlog,
        *(rollup.c[name] for name in BUCKET_COLUMNS),
    ]
    if "enqueued" in present:
        columns.append(rollup.c.enqueued)
    else:
        columns.append(sa.null().label("enqueued"))
    return columns


def _created(
    storage: Storage, connection: sa.Connection, names: Sequence[str]
) -> dict[str, tuple[str, datetime]]:
    """Each queue's table and when it was made, from the registry."""
    if not names:
        return {}
    registry = storage.registry
    found = connection.execute(
        sa.select(registry.c.name, registry.c.table_name, registry.c.created_at).where(
            registry.c.name.in_(list(names))
        )
    ).all()
    return {name: (table_name, created_at) for name, table_name, created_at in found}


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
