"""The enqueued messages the rollup cannot have counted yet: the ones in the queue table never
leased (`started_at` NULL), counted by the step they were created in when the chart is read.
Rows past the queue's highest id sampled before the window are read (through the primary key);
without such a sample, every row created since the window began."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from ..sqltypes import UtcDateTime


def created_per_step(
    connection: sa.Connection,
    table: sa.Table,
    start: int,
    step: int,
    n: int,
    after_id: int | None,
) -> list[int]:
    """Never-leased messages created in each of the `n` steps of `step` seconds from `start`
    (Unix seconds): one statement, one pass over the rows, on every engine (each step's count
    is a sum of comparisons with bound times, no engine's date functions)."""
    bounds = [datetime.fromtimestamp(start + i * step, UTC) for i in range(n)]
    since = [
        sa.func.coalesce(
            sa.func.sum(
                sa.case((table.c.created_at >= sa.literal(bound, UtcDateTime()), 1), else_=0)
            ),
            0,
        )
        for bound in bounds
    ]
    where = [
        table.c.started_at.is_(None),
        table.c.created_at >= sa.literal(bounds[0], UtcDateTime()),
    ]
    if after_id is not None:
        where.append(table.c.id > after_id)
    from_each = [int(value) for value in connection.execute(sa.select(*since).where(*where)).one()]
    return [count - later for count, later in zip(from_each, [*from_each[1:], 0], strict=True)]
