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
    (Unix seconds). Counted per distinct `created_at` by the engine (one enqueue's rows share
    it: the clock of its statement, or of its transaction on PostgreSQL) and put in their steps
    here, so no engine's date functions are needed."""
    since = datetime.fromtimestamp(start, UTC)
    where = [table.c.started_at.is_(None), table.c.created_at >= sa.literal(since, UtcDateTime())]
    if after_id is not None:
        where.append(table.c.id > after_id)
    per_step = [0] * n
    counted = sa.select(table.c.created_at, sa.func.count()).where(*where)
    for created_at, count in connection.execute(counted.group_by(table.c.created_at)):
        i = (int(created_at.timestamp()) - start) // step
        if 0 <= i < n:
            per_step[i] += int(count)
    return per_step
