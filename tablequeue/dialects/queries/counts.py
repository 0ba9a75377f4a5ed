"""Counting: the backlog, the load an autoscaler scales on, whether anything is due, and
messages per status."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.selectable import Select

from .base import TableQueries, statement


class CountQueries(TableQueries):
    @statement
    def backlog(self) -> Select[int, Any, datetime]:
        """Due messages: their number, the oldest due time, and the database's clock."""
        t, d = self.table, self.dialect
        due = sa.and_(self.leasable, t.c.process_after <= d.now())
        return sa.select(sa.func.count(), sa.func.min(t.c.process_after), d.now()).where(due)

    @statement
    def load(self) -> Select[int]:
        """The load an autoscaler scales on: due messages plus leased ones (work in hand, so
        busy workers are not scaled away). count(*) of no rows is 0, never NULL."""
        t, d = self.table, self.dialect
        due = sa.and_(self.leasable, t.c.process_after <= d.now())
        return sa.select(sa.func.count()).where(sa.or_(due, self.leased))

    @statement
    def due(self) -> Select[int]:
        """The id of one message a lease could take now, if any, read without locking it (a
        lease skips the rows other transactions hold locked)."""
        t, d = self.table, self.dialect
        now = d.now()
        not_expired = sa.or_(t.c.expires_at.is_(None), t.c.expires_at > now)
        due = sa.and_(self.leasable, t.c.process_after <= now, not_expired)
        return sa.select(t.c.id).where(due).limit(1)

    def count_by_status(self, statuses: Sequence[str] | None = None) -> Select[str, int]:
        """Messages per status (of the given statuses only, when given)."""
        t = self.table
        counted = sa.select(t.c.status, sa.func.count())
        if statuses is not None:
            counted = counted.where(t.c.status.in_(statuses))
        return counted.group_by(t.c.status)
