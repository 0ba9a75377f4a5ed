"""Leasing: the lease itself and its gates (pause, rate limit, global concurrency, ordered
groups), the locks of a limited lease, and what a lease holder does with its leases (extend,
check, give back)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.selectable import Select

from ... import names
from ...sqltypes import UtcDateTime
from ..statuses import literal_status
from ..types import GroupLease
from .base import TableQueries, bind, statement


class LeaseQueries(TableQueries):
    @statement
    def lease(
        self,
        rate_limited: bool = False,
        concurrency_limited: bool = False,
        group: GroupLease | None = None,
    ) -> sa.Update:
        """Take up to :b_n due messages, highest priority then oldest, skipping locked rows,
        unless queue :b_queue is paused (or, not `rate_limited`, has a rate limit; not
        `concurrency_limited`, a global concurrency; without `group`, ordered groups)."""
        t, d = self.table, self.dialect
        now = d.now()
        gates = [self.flow_gate(rate_limited, concurrency_limited, group)]
        if group is not None:
            gates.append(self.group_gate(group))
        candidates = (
            sa.select(t.c.id)
            .where(
                self.leasable,
                t.c.process_after <= now,
                sa.or_(t.c.expires_at.is_(None), t.c.expires_at > now),
                *gates,
            )
            .order_by(t.c.priority.desc(), t.c.process_after, t.c.id)
            .limit(bind("b_n", sa.Integer()))
        )
        locked = d.lock_candidates(candidates, names.lease_index_name(t.name))
        return (
            sa.update(t)
            .where(t.c.id.in_(locked.scalar_subquery()))
            .values(
                status=literal_status(names.LEASED),
                attempts=t.c.attempts + 1,
                lease_expires_at=d.seconds_from_now(bind("b_lease", sa.Float())),
                lease_owner=bind("b_owner", sa.String()),
                correlation_id=bind("b_cid", sa.String()),
                updated_at=now,
                started_at=now,
            )
            .returning(*t.c)
        )

    def flow_gate(
        self,
        rate_limited: bool,
        concurrency_limited: bool = False,
        group: GroupLease | None = None,
    ) -> sa.ColumnElement[bool]:
        """True while queue :b_queue may lease: not paused and, unless the caller took tokens
        from its bucket (`rate_limited`), without a rate limit; unless the caller counted its
        leased messages under the registry row's lock (`concurrency_limited`), without a global
        concurrency; unless it leases by groups (`group`), without ordered groups. Two
        primary-key probes in the lease statement itself: a queue without limits costs no
        round trip."""
        g, r = self.registry, self.rate_limits
        queue = bind("b_queue", sa.String())
        shut: sa.ColumnElement[bool] = g.c.paused_at.is_not(None)
        if not concurrency_limited:
            shut = sa.or_(shut, g.c.max_leased.is_not(None))
        if group is None:
            shut = sa.or_(shut, g.c.group_limit.is_not(None))
        running = ~sa.exists().where(g.c.name == queue, shut)
        if rate_limited:
            return running
        return sa.and_(running, ~sa.exists().where(r.c.queue == queue))

    def group_gate(self, group: GroupLease) -> sa.ColumnElement[bool]:
        """True for a message without a group key, or one whose key has fewer than the limit
        (:b_k, or one) of messages ahead of it (lower id) that hold the group, or Leased after
        it (an enqueue that committed late). Each part is a range of the group index
        (`storage/schema.py`: key, status, id)."""
        t = self.table
        ahead = t.alias("ahead")
        holding = names.GROUP_HOLDING + (names.GROUP_HOLDING_ON_FAILURE if group.hold else ())
        same_key = ahead.c.group_key == t.c.group_key
        before = sa.and_(
            same_key,
            ahead.c.status.in_([literal_status(status) for status in holding]),
            ahead.c.id < t.c.id,
        )
        leased_after = sa.and_(
            same_key, ahead.c.status == literal_status(names.LEASED), ahead.c.id > t.c.id
        )
        if group.limit == 1:
            free = sa.and_(~sa.exists().where(before), ~sa.exists().where(leased_after))
        else:
            count = sa.select(sa.func.count()).where(before).scalar_subquery()
            late = sa.select(sa.func.count()).where(leased_after).scalar_subquery()
            free = count + late < bind("b_k", sa.Integer())
        return sa.or_(t.c.group_key.is_(None), free)

    @statement
    def lock_bucket(self) -> Select[Any]:
        """The rate-limit bucket of queue :b_queue, locked until the transaction ends (leases
        of a rate-limited queue take turns here), with the database clock."""
        r = self.rate_limits
        return (
            sa.select(
                r.c.messages_per_second,
                r.c.burst,
                r.c.theoretical_arrival,
                sa.type_coerce(self.dialect.now(), UtcDateTime()).label("now"),
            )
            .where(r.c.queue == bind("b_queue", sa.String()))
            .with_for_update()
            .with_hint(r, "WITH (UPDLOCK, ROWLOCK)", "mssql")
        )

    @statement
    def lock_concurrency(self) -> Select[Any]:
        """Queue :b_queue's pause, global concurrency and groups from its registry row, locked
        until the transaction ends (leases of a queue with a global concurrency or ordered
        groups take turns here)."""
        g = self.registry
        return (
            sa.select(g.c.paused_at, g.c.max_leased, g.c.group_limit, g.c.group_hold)
            .where(g.c.name == bind("b_queue", sa.String()))
            .with_for_update()
            .with_hint(g, "WITH (UPDLOCK, ROWLOCK)", "mssql")
        )

    @statement
    def count_leased(self) -> Select[int]:
        """The queue's Leased messages, lapsed ones included until the sweep settles them (read
        on the status index)."""
        return sa.select(sa.func.count()).where(self.leased)

    @statement
    def take_tokens(self) -> sa.Update:
        """Record the leases taken from queue :b_queue's bucket: its new :b_arrival."""
        r = self.rate_limits
        return (
            sa.update(r)
            .where(r.c.queue == bind("b_queue", sa.String()))
            .values(
                theoretical_arrival=bind("b_arrival", sa.Double()),
                updated_at=self.dialect.now(),
            )
        )

    @statement
    def extend(self) -> sa.Update:
        """Extend the leases :b_owner still holds among :b_ids by :b_lease seconds."""
        return self.extend_leases().returning(self.table.c.id)

    def extend_leases(self) -> sa.Update:
        """`extend` without RETURNING, for engines that cannot return from an UPDATE."""
        d = self.dialect
        return (
            sa.update(self.table)
            .where(self._held_among_ids())
            .values(
                lease_expires_at=d.seconds_from_now(bind("b_lease", sa.Float())),
                updated_at=d.now(),
            )
        )

    @statement
    def held(self) -> Select[int]:
        """Which of :b_ids :b_owner still holds."""
        return sa.select(self.table.c.id).where(self._held_among_ids())

    @statement
    def release(self) -> sa.Update:
        """Give back unstarted leases among :b_ids: Pending again, the attempt not counted."""
        return self._give_back(self._held_among_ids())

    def _give_back(self, where: sa.ColumnElement[bool]) -> sa.Update:
        """Leases given back unstarted: Pending again, the attempt not counted."""
        t, d = self.table, self.dialect
        return (
            sa.update(t)
            .where(where)
            .values(
                status=literal_status(names.PENDING),
                attempts=sa.case((t.c.attempts > 0, t.c.attempts - 1), else_=0),
                lease_expires_at=None,
                updated_at=d.now(),
            )
        )

    @statement
    def release_untracked(self) -> sa.Update:
        """Give back, as `release` does, the leases :b_owner took at or after :b_since (database
        clock, `started_at`) that are not among :b_tracked: a worker's leases whose answer it
        never received (the connection dropped while the lease committed)."""
        t = self.table
        tracked = sa.bindparam("b_tracked", expanding=True, type_=sa.BigInteger())
        return self._give_back(
            sa.and_(
                self.leased,
                t.c.lease_owner == bind("b_owner", sa.String()),
                t.c.started_at >= bind("b_since", UtcDateTime()),
                t.c.id.not_in(tracked),
            )
        )

    def _held_among_ids(self) -> sa.ColumnElement[bool]:
        t = self.table
        return sa.and_(
            t.c.id.in_(sa.bindparam("b_ids", expanding=True, type_=sa.BigInteger())),
            self.still_leased,
            t.c.lease_owner == bind("b_owner", sa.String()),
        )
