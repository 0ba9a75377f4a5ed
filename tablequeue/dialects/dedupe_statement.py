"""What the enqueue by messageId does to an existing row in each dedupe mode
(`names.DedupeMode`), and the read of the rows it left as they were.

replace: ON CONFLICT DO UPDATE (today's upsert). keep: ON CONFLICT DO NOTHING, so two concurrent
enqueues of one new messageId end with one row (the unique index decides). window: DO UPDATE
only WHERE the existing row's `created_at` is at least :b_window seconds old by the database's
clock, and the update starts the window again (`created_at` becomes now). The window is a bound
parameter: one statement per mode, whatever the window.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.dml import Insert

from ..names import DedupeMode
from .parts import SqlParts

WINDOW = "b_window"


def on_conflict(
    d: SqlParts,
    insert: Insert,
    set_: dict[str, Any],
    changed: sa.ColumnElement[bool] | None,
    dedupe: DedupeMode,
) -> Insert:
    """The insert made an upsert by messageId in mode `dedupe`; `changed` (an idempotent
    queue's body comparison) further limits which rows are replaced."""
    if dedupe == "keep":
        return d.keep_message_id(insert)
    if dedupe == "window":
        table = insert.table
        assert isinstance(table, sa.Table)
        passed = sa.not_(_within(d, table))
        changed = passed if changed is None else sa.and_(passed, changed)
        set_ = set_ | {"created_at": d.now()}
    return d.on_conflict_message_id(insert, set_, changed)


def left_rows(d: SqlParts, t: sa.Table, dedupe: DedupeMode) -> sa.Select[Any]:
    """The rows of :b_message_ids, which an enqueue in mode `dedupe` left as they were; in mode
    window with `within` 1 where the window still holds (else the idempotent comparison left
    the row, the outcome `discarded`)."""
    columns: list[sa.ColumnElement[Any]] = [
        t.c.id,
        t.c.message_id,
        t.c.tracking_id,
        t.c.version,
        t.c.status,
    ]
    if dedupe == "window":
        within = sa.case((_within(d, t), sa.literal_column("1")), else_=sa.literal_column("0"))
        columns.append(within.label("within"))
    ids = sa.bindparam("b_message_ids", expanding=True, type_=t.c.message_id.type)
    return sa.select(*columns).where(t.c.message_id.in_(ids))


def _within(d: SqlParts, t: sa.Table) -> sa.ColumnElement[bool]:
    """The row was enqueued less than :b_window seconds ago."""
    window = sa.bindparam(WINDOW, type_=sa.Float())
    return t.c.created_at > d.seconds_from_now(-window)
