"""Housekeeping's statements: lapsed leases settled by `onLeaseExpired`, expired messages."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ... import names
from ..statuses import literal_status
from ..types import LeaseExpiredPolicy
from .base import TableQueries, statement, swept_columns


class SweepQueries(TableQueries):
    @statement
    def sweep_lapsed_leases(self, policy: LeaseExpiredPolicy, max_attempts: int) -> sa.Update:
        """Expired leases follow onLeaseExpired (Retry: Pending, or Error after maxAttempts;
        Abandon: Abandoned); returns each swept row's new status."""
        lapsed, values = self.lapsed_lease_changes(policy, max_attempts)
        t = self.table
        return sa.update(t).where(lapsed).values(**values).returning(*swept_columns(t))

    def lapsed_lease_changes(
        self, policy: LeaseExpiredPolicy, max_attempts: int
    ) -> tuple[sa.ColumnElement[bool], dict[str, Any]]:
        """Which leases lapsed, and the values that settle them (status first)."""
        t, d = self.table, self.dialect
        now = d.now()
        lapsed = sa.and_(self.leased, t.c.lease_expires_at < now)
        note = (
            sa.literal("lease expired; held by ", sa.Text)
            + sa.func.coalesce(t.c.lease_owner, "?")
            + sa.literal(", correlation id ", sa.Text)
            + sa.func.coalesce(t.c.correlation_id, "?")
        )
        new_status: sa.ColumnElement[Any]
        untried_new_version = t.c.attempts == 0  # enqueued while the old one was leased
        if policy == "Retry":
            give_up = sa.and_(t.c.attempts >= max_attempts, ~untried_new_version)
            new_status = sa.case(
                (give_up, literal_status(names.ERROR)), else_=literal_status(names.PENDING)
            )
        else:
            new_status = sa.case(
                (untried_new_version, literal_status(names.PENDING)),
                else_=literal_status(names.ABANDONED),
            )
        values = {
            "status": new_status,
            "last_error": note,
            "lease_expires_at": None,
            "updated_at": now,
        }
        return lapsed, values

    @statement
    def expire(self) -> sa.Update:
        """Messages past their expiry that no worker took: Expired."""
        return self.expire_messages().returning(self.table.c.id)

    def expire_messages(self) -> sa.Update:
        """`expire` without RETURNING, for engines that cannot return from an UPDATE."""
        t, d = self.table, self.dialect
        now = d.now()
        return (
            sa.update(t)
            .where(self.leasable, t.c.expires_at <= now)
            .values(status=literal_status(names.EXPIRED), updated_at=now)
        )
