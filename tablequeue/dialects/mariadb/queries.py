"""The statements MariaDB runs where the shared ones return rows from an UPDATE (MariaDB has
INSERT ... RETURNING but no UPDATE ... RETURNING): a locking read, then an update by id.

The lease reads each leasable status on its own, in lease order, `FOR UPDATE SKIP LOCKED`:
with the lease index led by `status` (MariaDB has no partial indexes) each part reads the index
in order and stops after :b_n rows, where `status IN (...)` would sort every due message and
lock them all. The two parts lock at most 2 * :b_n rows; the batch is the first :b_n of them.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.selectable import CompoundSelect, Select

from ... import names
from ...names import DedupeMode
from ...sqltypes import UtcDateTime
from ..queries import Queries, statement, swept_columns
from ..statuses import literal_status
from ..types import GroupLease, LeaseExpiredPolicy

NOW_LABEL = "b_now"
"""The database clock, selected with the lease candidates."""


class MariaDbQueries(Queries):
    @statement
    def lease(  # type: ignore[override]
        self,
        rate_limited: bool = False,
        concurrency_limited: bool = False,
        group: GroupLease | None = None,
    ) -> CompoundSelect[Any]:
        """Differs because MariaDB has no UPDATE ... RETURNING and no partial indexes: due
        messages in lease order per leasable status, locked, with the clock (none while the
        queue's flow gate is shut, `flow_gate`); `MariaDbDialect.lease` marks them Leased by id
        (`mark_leased`)."""
        t, d = self.table, self.dialect
        # Without the hint the optimizer may scan the table and sort every due message (all
        # of them locked); the lease index gives them in lease order and stops after :b_n.
        index = f"FORCE INDEX (`{names.lease_index_name(t.name)}`)"
        parts = []
        for status in names.LEASABLE:
            now = d.now()
            parts.append(
                sa.select(*t.c, now.label(NOW_LABEL))
                .where(
                    t.c.status == literal_status(status),
                    t.c.process_after <= now,
                    sa.or_(t.c.expires_at.is_(None), t.c.expires_at > now),
                    self.flow_gate(rate_limited, concurrency_limited, group),
                    *([self.group_gate(group)] if group is not None else []),
                )
                .order_by(t.c.priority.desc(), t.c.process_after, t.c.id)
                .limit(sa.bindparam("b_n", type_=sa.Integer()))
                .with_for_update(skip_locked=True)
                .with_hint(t, index, "mariadb")
            )
        return sa.union_all(*parts)

    @statement
    def mark_leased(self) -> sa.Update:
        """Lease the chosen candidates :b_ids until :b_expires (the clock read + the lease)."""
        t = self.table
        now = sa.bindparam("b_now", type_=UtcDateTime())
        return (
            sa.update(t)
            .where(t.c.id.in_(sa.bindparam("b_ids", expanding=True, type_=sa.BigInteger())))
            .values(
                status=literal_status(names.LEASED),
                attempts=t.c.attempts + 1,
                lease_expires_at=sa.bindparam("b_expires", type_=UtcDateTime()),
                lease_owner=sa.bindparam("b_owner", type_=sa.String()),
                correlation_id=sa.bindparam("b_cid", type_=sa.String()),
                updated_at=now,
                started_at=now,
            )
        )

    @statement
    def extend(self) -> sa.Update:
        """Differs because MariaDB has no UPDATE ... RETURNING: `extend_leases` alone;
        `MariaDbDialect.extend` reads its row count."""
        return self.extend_leases()

    @statement
    def expiring(self) -> Select[Any]:
        """Up to :b_n messages past their expiry that no worker took, read without locks: an
        UPDATE that searched for them would lock each leasable message it reads until it has
        compared its expiry, and a lease (SKIP LOCKED) would pass over a due message then."""
        t = self.table
        due_to_expire = sa.and_(self.leasable, t.c.expires_at <= self.dialect.now())
        return sa.select(t.c.id).where(due_to_expire).limit(sa.bindparam("b_n", type_=sa.Integer()))

    @statement
    def expire(self) -> sa.Update:
        """Differs because MariaDB has no UPDATE ... RETURNING, and an UPDATE that searched
        would lock leasable messages (`expiring`): expire the messages :b_ids that `expiring`
        found, unless leased meanwhile."""
        ids = sa.bindparam("b_ids", expanding=True, type_=sa.BigInteger())
        return self.expire_messages().where(self.table.c.id.in_(ids))

    @statement
    def sweep_lapsed_leases(self, policy: LeaseExpiredPolicy, max_attempts: int) -> Select[Any]:  # type: ignore[override]
        """Differs because MariaDB has no UPDATE ... RETURNING: the lapsed leases, locked (SKIP
        LOCKED), with the status each gets; `settle_lapsed_leases` then updates them by id."""
        lapsed, values = self.lapsed_lease_changes(policy, max_attempts)
        # A lapsed lease whose worker is recording its outcome right now is left to that
        # worker (skipped, not waited for): no lock wait, so no deadlock with it.
        t = self.table
        status = values["status"].label("status")
        columns = [status, *swept_columns(t)[1:]]
        locked = sa.select(*columns).where(lapsed)
        return locked.with_for_update(skip_locked=True)

    @statement
    def settle_lapsed_leases(self, policy: LeaseExpiredPolicy, max_attempts: int) -> sa.Update:
        """Settle the lapsed leases :b_ids that `sweep_lapsed_leases` locked."""
        t = self.table
        _, values = self.lapsed_lease_changes(policy, max_attempts)
        ids = sa.bindparam("b_ids", expanding=True, type_=sa.BigInteger())
        return sa.update(t).where(t.c.id.in_(ids)).values(**values)

    @statement
    def upsert_by_message_id(
        self, idempotent: bool, dedupe: DedupeMode = "replace"
    ) -> tuple[sa.Insert, Any]:
        """Differs because ON DUPLICATE KEY UPDATE has no WHERE and returns every row, written
        or not: as shared, but the statement of an idempotent queue or of a dedupe mode that
        keeps rows also returns whether the row was written (`written`: a row left as it was
        keeps its old `updated_at`, a written one gets the statement's clock), for
        `MariaDbDialect.enqueue_round` to leave the others out."""
        statement, per_row = self.enqueue_statement(True, idempotent, dedupe=dedupe)
        if idempotent or dedupe != "replace":
            written = self.table.c.updated_at == self.dialect.now()
            statement = statement.returning(written.label("written"))
        return statement, per_row

    def extra_statements(self) -> dict[str, Any]:
        """This engine's statements beyond the shared names (for the golden SQL)."""
        return {
            "mark_leased": self.mark_leased(),
            "expiring": self.expiring(),
            "settle_lapsed_leases_abandon": self.settle_lapsed_leases("Abandon", 3),
            "settle_lapsed_leases_retry": self.settle_lapsed_leases("Retry", 3),
        }
