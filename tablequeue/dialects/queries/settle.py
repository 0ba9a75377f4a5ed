"""Settling leased messages: a success deletes the row or keeps it Processed (or Sleeping, to
run again), a failure retries or gives up, a row given a new version while leased goes back to
the queue; each only while the row is still held at the version leased (`held_by`)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ... import names
from ..per_row import PerRow
from ..statuses import literal_status
from .base import HELD_COLUMNS, TableQueries, bind, statement


class SettleQueries(TableQueries):
    @statement
    def delete_done(self) -> tuple[sa.Delete, PerRow]:
        """Delete completed messages still held at the version leased."""
        per_row = PerRow(self.dialect, HELD_COLUMNS)
        return sa.delete(self.table).where(self.held_by(per_row)), per_row

    @statement
    def mark_processed(self) -> tuple[sa.Update, PerRow]:
        """Keep completed messages as Processed, with their result and progress."""
        return self._finish(names.PROCESSED)

    @statement
    def reschedule(self) -> tuple[sa.Update, PerRow]:
        """Completed messages asked to run again at :b_again: Sleeping, attempts reset."""
        return self._finish(names.SLEEPING)

    def _finish(self, status: str) -> tuple[sa.Update, PerRow]:
        t, d = self.table, self.dialect
        per_row = PerRow(
            d,
            [
                *HELD_COLUMNS,
                sa.column("b_again", t.c.process_after.type),
                sa.column("b_result", t.c.result.type),
                sa.column("b_progress", t.c.progress.type),
            ],
        )
        b = per_row.c
        values: dict[str, Any] = {
            "status": literal_status(status),
            "previous_message": sa.case(
                (t.c.message_id.is_not(None), t.c.message), else_=t.c.previous_message
            ),
            "result": b["b_result"],
            "progress": sa.func.coalesce(b["b_progress"], t.c.progress),
            "lease_expires_at": None,
            "processed_at": d.now(),
            "updated_at": d.now(),
        }
        if status == names.SLEEPING:
            values["process_after"] = b["b_again"]
            values["attempts"] = 0
        return sa.update(t).where(self.held_by(per_row)).values(**values), per_row

    @statement
    def fail(self) -> tuple[sa.Update, PerRow]:
        """Failed messages: Sleeping until :b_delay seconds from now, or Error (:b_give_up)."""
        t, d = self.table, self.dialect
        per_row = PerRow(
            d,
            [
                *HELD_COLUMNS,
                sa.column("b_error", sa.Text()),
                sa.column("b_give_up", sa.Boolean()),
                sa.column("b_delay", sa.Float()),
            ],
        )
        b = per_row.c
        give_up = b["b_give_up"]
        statement = (
            sa.update(t)
            .where(self.held_by(per_row))
            .values(
                status=sa.case(
                    (give_up, literal_status(names.ERROR)), else_=literal_status(names.SLEEPING)
                ),
                process_after=sa.case(
                    (give_up, t.c.process_after), else_=d.seconds_from_now(b["b_delay"])
                ),
                last_error=b["b_error"],
                lease_expires_at=None,
                updated_at=d.now(),
            )
        )
        return statement, per_row

    @statement
    def requeue_newer_version(
        self, default_status: str, completed: bool
    ) -> tuple[sa.Update, PerRow]:
        """Messages still held at another version got a new body while they were worked on:
        back to the queue's default status (Sleeping if not yet due); after a completion the
        processed body becomes the previous one (:b_previous)."""
        t, d = self.table, self.dialect
        per_row = PerRow(d, [*HELD_COLUMNS, sa.column("b_previous", t.c.previous_message.type)])
        status: sa.ColumnElement[Any] = sa.literal(default_status)
        if default_status == names.PENDING:
            status = sa.case(
                (t.c.process_after > d.now(), literal_status(names.SLEEPING)), else_=status
            )
        values: dict[str, Any] = {
            "status": status,
            "attempts": 0,
            "lease_expires_at": None,
            "updated_at": d.now(),
        }
        if completed:
            values["previous_message"] = sa.case(
                (t.c.message_id.is_not(None), per_row.c["b_previous"]), else_=t.c.previous_message
            )
        held_elsewhere = self.held_by(per_row, same_version=False)
        return sa.update(t).where(held_elsewhere).values(**values), per_row

    def held_by(self, per_row: PerRow, same_version: bool = True) -> sa.ColumnElement[bool]:
        """The row is still leased by this owner in this lease batch (at the version leased,
        or `same_version=False`: at another one), found by its id."""
        t, b = self.table, per_row.c
        version = t.c.version == b["b_version"] if same_version else t.c.version != b["b_version"]
        held = [
            t.c.id == b["b_id"],
            version,
            t.c.lease_owner == bind("b_owner", sa.String()),
            t.c.correlation_id == b["b_cid"],
            self.still_leased,
        ]
        if per_row.source is not None:
            among = self.dialect.among_per_row_ids(t.c.id, "b_id")
            if among is not None:
                held.append(among)
        return sa.and_(*held)
