"""Enqueueing: the insert, or the upsert by messageId in each dedupe mode (`names.DedupeMode`),
for many rows through a per-row source or for one with scalar parameters, and the read of the
rows a dedupe left as they were.

What the enqueue by messageId does to an existing row in each dedupe mode
(`names.DedupeMode`), and the read of the rows it left as they were.

replace: ON CONFLICT DO UPDATE (today's upsert). keep: ON CONFLICT DO NOTHING, so two concurrent
enqueues of one new messageId end with one row (the unique index decides). window: DO UPDATE
only WHERE the existing row's `created_at` is at least :b_window seconds old by the database's
clock, and the update starts the window again (`created_at` becomes now). The window is a bound
parameter: one statement per mode, whatever the window."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.dml import Insert

from ... import names
from ...names import DedupeMode
from ..parts import SqlParts
from ..per_row import PerRow
from ..statuses import literal_status
from .base import TableQueries, statement

WINDOW = "b_window"


def dedupe_on_conflict(
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


def dedupe_left_rows(d: SqlParts, t: sa.Table, dedupe: DedupeMode) -> sa.Select[Any]:
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


def enqueue_statement(
    d: SqlParts,
    t: sa.Table,
    registry: sa.Table,
    upsert: bool,
    idempotent: bool,
    one_row: bool = False,
    dedupe: DedupeMode = "replace",
) -> tuple[sa.Insert, PerRow]:
    """The INSERT (or upsert by messageId) of new messages: per-row parameters, or scalar ones
    for exactly one message (`one_row`); the status from the queue's registry row; an existing
    row as `dedupe` says (`dedupe_on_conflict`)."""
    now = d.now()
    per_row = PerRow(
        d,
        [
            sa.column("b_message_id", t.c.message_id.type),
            sa.column("b_status", t.c.status.type),
            sa.column("b_scheduled", sa.Boolean()),
            sa.column("b_priority", t.c.priority.type),
            sa.column("b_message", t.c.message.type),
            sa.column("b_headers", t.c.headers.type),
            sa.column("b_at", t.c.process_after.type),
            sa.column("b_after", sa.Float()),
            sa.column("b_expires_at", t.c.expires_at.type),
            sa.column("b_expires_after", sa.Float()),
            sa.column("b_tracking_id", t.c.tracking_id.type),
            sa.column("b_correlation_id", t.c.app_correlation_id.type),
            sa.column("b_label", t.c.label.type),
            sa.column("b_group_key", t.c.group_key.type),
        ],
        arrays=True,  # the dialect's enqueue_round/enqueue_autocommit run it
        one_row=one_row,
    )
    b = per_row.c
    # Scalar parameters (one row, or SQLite's multi-row VALUES, one tuple per message): one
    # registry lookup per row. The rows of a source share the lookups of `_status_of_source`.
    scheduled = (
        _status_per_row(registry, b) if per_row.source is None else _status_of_source(registry, b)
    )
    values: dict[str, Any] = {
        "message_id": b["b_message_id"],
        "status": scheduled,
        "priority": b["b_priority"],
        "message": sa.func.coalesce(b["b_message"], _json_null(t)),
        "headers": b["b_headers"],
        "version": sa.literal_column("1"),
        "attempts": sa.literal_column("0"),
        "process_after": sa.func.coalesce(b["b_at"], d.seconds_from_now(b["b_after"])),
        "expires_at": sa.func.coalesce(b["b_expires_at"], d.seconds_from_now(b["b_expires_after"])),
        "tracking_id": b["b_tracking_id"],
        "app_correlation_id": b["b_correlation_id"],
        "label": b["b_label"],
        "group_key": b["b_group_key"],
        "created_at": now,
        "updated_at": now,
    }
    if per_row.source is None:
        insert = d.insert(t).values(**values)
    else:
        insert = d.insert(t).from_select(list(values), sa.select(*values.values()))
    returning: list[sa.ColumnElement[Any]] = [
        t.c.id,
        t.c.message_id,
        t.c.tracking_id,
        t.c.version,
        t.c.status,
        *d.notify_when_returning(t.name),
    ]
    if not upsert:
        return insert.returning(*returning), per_row
    new = d.excluded(insert)
    # A new version never takes a lease away: completing the old one requeues the new one.
    # A status that keeps messages from workers (OnHold, Paused) applies at once, though:
    # the old version's outcome then finds its lease gone and changes nothing.
    keeps_lease = sa.and_(
        t.c.status == literal_status(names.LEASED),
        new.status.in_([literal_status(names.PENDING), literal_status(names.SLEEPING)]),
    )
    set_ = {
        "message": new.message,
        "headers": new.headers,
        "priority": new.priority,
        "process_after": new.process_after,
        "expires_at": new.expires_at,
        "app_correlation_id": new.app_correlation_id,
        "label": new.label,
        "group_key": new.group_key,
        "version": t.c.version + 1,
        "status": sa.case((keeps_lease, t.c.status), else_=new.status),
        # 0 also marks a Leased row whose new version was never tried (see sweep).
        "attempts": 0,
        "updated_at": now,
    }
    changed = d.bodies_differ(t.c.message, new.message) if idempotent else None
    statement = dedupe_on_conflict(d, insert, set_, changed, dedupe)
    return statement.returning(*returning), per_row


def _status_of_source(g: sa.Table, b: dict[str, sa.ColumnElement[Any]]) -> sa.ColumnElement[Any]:
    """The status of each row of a per-row source, from uncorrelated lookups of the registry
    (the database reads them once per statement): NULL, refused by the column, when the queue
    was deleted, even with an explicit status."""
    default_status = (
        sa.select(g.c.default_status)
        .where(g.c.name == sa.bindparam("b_queue", type_=sa.String()))
        .scalar_subquery()
    )
    status = sa.case(
        (default_status.is_(None), sa.null()),
        else_=sa.func.coalesce(b["b_status"], default_status),
    )
    return sa.case(
        (
            sa.and_(b["b_scheduled"], status == literal_status(names.PENDING)),
            literal_status(names.SLEEPING),
        ),
        else_=status,
    )


def _status_per_row(g: sa.Table, b: dict[str, sa.ColumnElement[Any]]) -> sa.ColumnElement[Any]:
    """The status of a new message given by scalar parameters, read in one lookup of the
    registry (no row, so NULL and refused by the column, when the queue was deleted).

    One lookup whatever the parameters, so PostgreSQL keeps the one-row statement's generic
    plan instead of planning each execution (a plan for the parameters' values would fold
    the CASE of `_status_of_source` and look cheaper). On SQLite, whose multi-row VALUES
    repeats the expression for each message, each lookup is one more subquery in the
    statement and the cost per row grows with rows x subqueries: the four per row of
    `_status_of_source` made a batch of 1,000 ~4x dearer inside SQLite (~95 against ~24 µs
    a row, SQLite 3.40)."""
    chosen = sa.func.coalesce(b["b_status"], g.c.default_status)
    sleeping = sa.and_(b["b_scheduled"], chosen == literal_status(names.PENDING))
    return (
        sa.select(sa.case((sleeping, literal_status(names.SLEEPING)), else_=chosen))
        .where(g.c.name == sa.bindparam("b_queue", type_=sa.String()))
        .scalar_subquery()
    )


def _json_null(t: sa.Table) -> sa.ColumnElement[Any]:
    """A JSON null (a body may be JSON null; per-row parameters make None SQL NULL)."""
    return sa.type_coerce(sa.literal_column("'null'"), t.c.message.type)


class EnqueueQueries(TableQueries):
    def enqueue_statement(
        self, upsert: bool, idempotent: bool, one_row: bool = False, dedupe: DedupeMode = "replace"
    ) -> tuple[sa.Insert, PerRow]:
        """`enqueue_statement` of this table (not kept: callers keep what they build)."""
        return enqueue_statement(
            self.dialect, self.table, self.registry, upsert, idempotent, one_row, dedupe
        )

    @statement
    def insert_new(self) -> tuple[sa.Insert, PerRow]:
        """Insert messages without identity (no conflict is possible)."""
        return self.enqueue_statement(upsert=False, idempotent=False)

    @statement
    def upsert_by_message_id(
        self, idempotent: bool, dedupe: DedupeMode = "replace"
    ) -> tuple[sa.Insert, PerRow]:
        """Insert, or make a new version of the message with the same messageId (as `dedupe`
        says); an idempotent queue discards a message whose body did not change."""
        return self.enqueue_statement(True, idempotent, dedupe=dedupe)

    @statement
    def left_rows(self, dedupe: DedupeMode) -> sa.Select[Any]:
        """The rows of :b_message_ids an enqueue in mode `dedupe` left as they were."""
        return dedupe_left_rows(self.dialect, self.table, dedupe)

    @statement
    def insert_one(self) -> sa.Insert:
        """`insert_new` for exactly one message, with scalar parameters (no per-row source)."""
        return self.enqueue_statement(False, False, True)[0]

    @statement
    def upsert_one(self, idempotent: bool, dedupe: DedupeMode = "replace") -> sa.Insert:
        """`upsert_by_message_id` for exactly one message, with scalar parameters."""
        return self.enqueue_statement(True, idempotent, True, dedupe)[0]

    @statement
    def adopt_escaped_bodies(self) -> tuple[sa.Update, PerRow]:
        """Rewrite as written (:b_new) the body of :b_message_id whose stored text is :b_old,
        the same body escaped as tables of schema version 4 and older hold it: before an
        idempotent enqueue compares the texts (`storage.readable_json`). No new version."""
        t, d = self.table, self.dialect
        per_row = PerRow(
            d,
            [
                sa.column("b_message_id", t.c.message_id.type),
                sa.column("b_old", sa.Text()),
                sa.column("b_new", t.c.message.type),
            ],
        )
        b = per_row.c
        same_body = sa.and_(
            t.c.message_id == b["b_message_id"], d.json_text(t.c.message) == b["b_old"]
        )
        return sa.update(t).where(same_body).values(message=b["b_new"]), per_row
