"""Every hot statement of a queue table, one named builder each: this project's `queries.sql`.

The statements are SQLAlchemy Core composed from a dialect's SQL parts (`now`, an upsert, a
locking hint, a per-row source); the rendering of each per engine is kept under
`tests/core/golden/<engine>/<statement>.sql`. A `Queries` is made once per table and builds
each statement on first use (building costs more than running it).

Built-in statuses appear as SQL literals so that the partial indexes on them serve prepared
(generic) plans; everything user-supplied is a bound parameter (`b_*`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.sql.selectable import Select

from .. import names
from ..names import DedupeMode
from ..sqltypes import UtcDateTime
from . import dedupe_statement
from .enqueue_statement import enqueue_statement
from .parts import SqlParts
from .per_row import PerRow
from .statuses import literal_status
from .types import GroupLease, LeaseExpiredPolicy

S = TypeVar("S")

HELD_COLUMNS: list[sa.ColumnClause[Any]] = [
    sa.column("b_id", sa.BigInteger()),
    sa.column("b_version", sa.Integer()),
    sa.column("b_cid", sa.String()),
]
"""Per-message parameters that identify a lease: the row, the version leased, the lease batch."""


def swept_columns(t: sa.Table) -> list[sa.ColumnElement[Any]]:
    """What a sweep tells of each lease it settled (`types.SweptLease`), new status first."""
    return [t.c.status, t.c.id, t.c.tracking_id, t.c.lease_owner, t.c.correlation_id, t.c.attempts]


def _bind(name: str, type_: Any = None) -> sa.BindParameter[Any]:
    return sa.bindparam(name, type_=type_)


class Queries:
    """The hot statements of one queue table on one engine."""

    def __init__(
        self, dialect: SqlParts, table: sa.Table, registry: sa.Table, rate_limits: sa.Table
    ) -> None:
        self.dialect = dialect
        self.table = table
        self.registry = registry
        self.rate_limits = rate_limits
        self._built: dict[tuple[Any, ...], Any] = {}
        t = table
        self.leasable = t.c.status.in_(
            [literal_status(names.PENDING), literal_status(names.SLEEPING)]
        )
        self.leased = t.c.status == literal_status(names.LEASED)
        self.still_leased = t.c.status + sa.literal_column("''") == literal_status(names.LEASED)
        """`leased` for rows found by their ids (`held_by`), in a form no index serves: the
        status index has an entry for every row leased since the last vacuum, which a plan
        through it reads for every batch."""

    def once(self, key: tuple[Any, ...], build: Callable[[], S]) -> S:
        """What `build` makes, made on first use and kept with the table's statements (e.g. a
        dialect's statement compiled for its driver)."""
        return self._once(key, build)

    def _once(self, key: tuple[Any, ...], build: Callable[[], S]) -> S:
        statement: S | None = self._built.get(key)
        if statement is None:
            statement = self._built[key] = build()
        return statement

    # --- lease ------------------------------------------------------------------------------

    def lease(
        self, limited: bool = False, capped: bool = False, group: GroupLease | None = None
    ) -> sa.Update:
        """Take up to :b_n due messages, highest priority then oldest, skipping locked rows,
        unless queue :b_queue is paused (or, not `limited`, has a rate limit; not `capped`, a
        global concurrency; without `group`, ordered groups)."""
        shape = group.shape if group is not None else None
        return self._once(
            ("lease", limited, capped, shape), lambda: self._lease(limited, capped, group)
        )

    def flow_gate(
        self, limited: bool, capped: bool = False, group: GroupLease | None = None
    ) -> sa.ColumnElement[bool]:
        """True while queue :b_queue may lease: not paused and, unless the caller took tokens
        from its bucket (`limited`), without a rate limit; unless the caller counted its leased
        messages under the registry row's lock (`capped`), without a global concurrency; unless
        it leases by groups (`group`), without ordered groups. Two primary-key probes in the
        lease statement itself: a queue without limits costs no round trip."""
        g, r = self.registry, self.rate_limits
        queue = _bind("b_queue", sa.String())
        shut: sa.ColumnElement[bool] = g.c.paused_at.is_not(None)
        if not capped:
            shut = sa.or_(shut, g.c.max_leased.is_not(None))
        if group is None:
            shut = sa.or_(shut, g.c.group_limit.is_not(None))
        running = ~sa.exists().where(g.c.name == queue, shut)
        if limited:
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
            free = count + late < _bind("b_k", sa.Integer())
        return sa.or_(t.c.group_key.is_(None), free)

    def _lease(self, limited: bool, capped: bool, group: GroupLease | None) -> sa.Update:
        t, d = self.table, self.dialect
        now = d.now()
        gates = [self.flow_gate(limited, capped, group)]
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
            .limit(_bind("b_n", sa.Integer()))
        )
        locked = d.lock_candidates(candidates, names.lease_index_name(t.name))
        return (
            sa.update(t)
            .where(t.c.id.in_(locked.scalar_subquery()))
            .values(
                status=literal_status(names.LEASED),
                attempts=t.c.attempts + 1,
                lease_expires_at=d.seconds_from_now(_bind("b_lease", sa.Float())),
                lease_owner=_bind("b_owner", sa.String()),
                correlation_id=_bind("b_cid", sa.String()),
                updated_at=now,
                started_at=now,
            )
            .returning(*t.c)
        )

    def lock_bucket(self) -> Select[Any]:
        """The rate-limit bucket of queue :b_queue, locked until the transaction ends (leases
        of a rate-limited queue take turns here), with the database clock."""
        return self._once(("lock_bucket",), self._lock_bucket)

    def _lock_bucket(self) -> Select[Any]:
        r = self.rate_limits
        return (
            sa.select(
                r.c.messages_per_second,
                r.c.burst,
                r.c.theoretical_arrival,
                sa.type_coerce(self.dialect.now(), UtcDateTime()).label("now"),
            )
            .where(r.c.queue == _bind("b_queue", sa.String()))
            .with_for_update()
            .with_hint(r, "WITH (UPDLOCK, ROWLOCK)", "mssql")
        )

    def lock_concurrency(self) -> Select[Any]:
        """Queue :b_queue's pause, global concurrency and groups from its registry row, locked
        until the transaction ends (leases of a queue with a global concurrency or ordered
        groups take turns here)."""
        return self._once(("lock_concurrency",), self._lock_concurrency)

    def _lock_concurrency(self) -> Select[Any]:
        g = self.registry
        return (
            sa.select(g.c.paused_at, g.c.max_leased, g.c.group_limit, g.c.group_hold)
            .where(g.c.name == _bind("b_queue", sa.String()))
            .with_for_update()
            .with_hint(g, "WITH (UPDLOCK, ROWLOCK)", "mssql")
        )

    def count_leased(self) -> Select[int]:
        """The queue's Leased messages, lapsed ones included until the sweep settles them (read
        on the status index)."""
        return self._once(("count_leased",), lambda: sa.select(sa.func.count()).where(self.leased))

    def take_tokens(self) -> sa.Update:
        """Record the leases taken from queue :b_queue's bucket: its new :b_arrival."""
        return self._once(("take_tokens",), self._take_tokens)

    def _take_tokens(self) -> sa.Update:
        r = self.rate_limits
        return (
            sa.update(r)
            .where(r.c.queue == _bind("b_queue", sa.String()))
            .values(
                theoretical_arrival=_bind("b_arrival", sa.Double()),
                updated_at=self.dialect.now(),
            )
        )

    def extend(self) -> sa.Update:
        """Extend the leases :b_owner still holds among :b_ids by :b_lease seconds."""
        return self._once(("extend",), self._extend)

    def _extend(self) -> sa.Update:
        return self.extend_leases().returning(self.table.c.id)

    def extend_leases(self) -> sa.Update:
        """`extend` without RETURNING, for engines that cannot return from an UPDATE."""
        d = self.dialect
        return (
            sa.update(self.table)
            .where(self._held_among_ids())
            .values(
                lease_expires_at=d.seconds_from_now(_bind("b_lease", sa.Float())),
                updated_at=d.now(),
            )
        )

    def held(self) -> Select[int]:
        """Which of :b_ids :b_owner still holds."""
        return self._once(
            ("held",), lambda: sa.select(self.table.c.id).where(self._held_among_ids())
        )

    def release(self) -> sa.Update:
        """Give back unstarted leases among :b_ids: Pending again, the attempt not counted."""
        return self._once(("release",), self._release)

    def _release(self) -> sa.Update:
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

    def release_untracked(self) -> sa.Update:
        """Give back, as `release` does, the leases :b_owner took at or after :b_since (database
        clock, `started_at`) that are not among :b_tracked: a worker's leases whose answer it
        never received (the connection dropped while the lease committed)."""
        return self._once(("release_untracked",), self._release_untracked)

    def _release_untracked(self) -> sa.Update:
        t = self.table
        tracked = sa.bindparam("b_tracked", expanding=True, type_=sa.BigInteger())
        return self._give_back(
            sa.and_(
                self.leased,
                t.c.lease_owner == _bind("b_owner", sa.String()),
                t.c.started_at >= _bind("b_since", UtcDateTime()),
                t.c.id.not_in(tracked),
            )
        )

    def _held_among_ids(self) -> sa.ColumnElement[bool]:
        t = self.table
        return sa.and_(
            t.c.id.in_(sa.bindparam("b_ids", expanding=True, type_=sa.BigInteger())),
            self.still_leased,
            t.c.lease_owner == _bind("b_owner", sa.String()),
        )

    # --- enqueue ----------------------------------------------------------------------------

    def enqueue_statement(
        self, upsert: bool, idempotent: bool, one_row: bool = False, dedupe: DedupeMode = "replace"
    ) -> tuple[sa.Insert, PerRow]:
        """`enqueue_statement` of this table (not kept: callers keep what they build)."""
        return enqueue_statement(
            self.dialect, self.table, self.registry, upsert, idempotent, one_row, dedupe
        )

    def insert_new(self) -> tuple[sa.Insert, PerRow]:
        """Insert messages without identity (no conflict is possible)."""
        return self._once(
            ("insert",), lambda: self.enqueue_statement(upsert=False, idempotent=False)
        )

    def upsert_by_message_id(
        self, idempotent: bool, dedupe: DedupeMode = "replace"
    ) -> tuple[sa.Insert, PerRow]:
        """Insert, or make a new version of the message with the same messageId (as `dedupe`
        says); an idempotent queue discards a message whose body did not change."""
        return self._once(
            ("upsert", idempotent, dedupe),
            lambda: self.enqueue_statement(True, idempotent, dedupe=dedupe),
        )

    def left_rows(self, dedupe: DedupeMode) -> sa.Select[Any]:
        """The rows of :b_message_ids an enqueue in mode `dedupe` left as they were."""
        return self._once(
            ("left", dedupe), lambda: dedupe_statement.left_rows(self.dialect, self.table, dedupe)
        )

    def insert_one(self) -> sa.Insert:
        """`insert_new` for exactly one message, with scalar parameters (no per-row source)."""
        return self._once(("insert", "one"), lambda: self.enqueue_statement(False, False, True)[0])

    def upsert_one(self, idempotent: bool, dedupe: DedupeMode = "replace") -> sa.Insert:
        """`upsert_by_message_id` for exactly one message, with scalar parameters."""
        return self._once(
            ("upsert", idempotent, dedupe, "one"),
            lambda: self.enqueue_statement(True, idempotent, True, dedupe)[0],
        )

    def adopt_escaped_bodies(self) -> tuple[sa.Update, PerRow]:
        """Rewrite as written (:b_new) the body of :b_message_id whose stored text is :b_old,
        the same body escaped as tables of schema version 4 and older hold it: before an
        idempotent enqueue compares the texts (`storage.readable_json`). No new version."""
        return self._once(("adopt",), self._adopt_escaped_bodies)

    def _adopt_escaped_bodies(self) -> tuple[sa.Update, PerRow]:
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

    # --- outcomes ---------------------------------------------------------------------------

    def delete_done(self) -> tuple[sa.Delete, PerRow]:
        """Delete completed messages still held at the version leased."""
        return self._once(("delete",), self._delete_done)

    def _delete_done(self) -> tuple[sa.Delete, PerRow]:
        per_row = PerRow(self.dialect, HELD_COLUMNS)
        return sa.delete(self.table).where(self.held_by(per_row)), per_row

    def mark_processed(self) -> tuple[sa.Update, PerRow]:
        """Keep completed messages as Processed, with their result and progress."""
        return self._once(("processed",), lambda: self._finish(names.PROCESSED))

    def reschedule(self) -> tuple[sa.Update, PerRow]:
        """Completed messages asked to run again at :b_again: Sleeping, attempts reset."""
        return self._once(("again",), lambda: self._finish(names.SLEEPING))

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

    def fail(self) -> tuple[sa.Update, PerRow]:
        """Failed messages: Sleeping until :b_delay seconds from now, or Error (:b_give_up)."""
        return self._once(("fail",), self._fail)

    def _fail(self) -> tuple[sa.Update, PerRow]:
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

    def requeue_newer_version(
        self, default_status: str, completed: bool
    ) -> tuple[sa.Update, PerRow]:
        """Messages still held at another version got a new body while they were worked on:
        back to the queue's default status (Sleeping if not yet due); after a completion the
        processed body becomes the previous one (:b_previous)."""
        key = ("requeue", default_status, completed)
        return self._once(key, lambda: self._requeue_newer(default_status, completed))

    def _requeue_newer(self, default_status: str, completed: bool) -> tuple[sa.Update, PerRow]:
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
            t.c.lease_owner == _bind("b_owner", sa.String()),
            t.c.correlation_id == b["b_cid"],
            self.still_leased,
        ]
        if per_row.source is not None:
            among = self.dialect.among_per_row_ids(t.c.id, "b_id")
            if among is not None:
                held.append(among)
        return sa.and_(*held)

    # --- housekeeping -----------------------------------------------------------------------

    def sweep_lapsed_leases(self, policy: LeaseExpiredPolicy, max_attempts: int) -> sa.Update:
        """Expired leases follow onLeaseExpired (Retry: Pending, or Error after maxAttempts;
        Abandon: Abandoned); returns each swept row's new status."""
        key = ("sweep", policy, max_attempts)
        return self._once(key, lambda: self._sweep_lapsed_leases(policy, max_attempts))

    def _sweep_lapsed_leases(self, policy: LeaseExpiredPolicy, max_attempts: int) -> sa.Update:
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

    def expire(self) -> sa.Update:
        """Messages past their expiry that no worker took: Expired."""
        return self._once(("expire",), self._expire)

    def _expire(self) -> sa.Update:
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

    # --- stats ------------------------------------------------------------------------------

    def backlog(self) -> Select[int, Any, datetime]:
        """Due messages: their number, the oldest due time, and the database's clock."""
        return self._once(("backlog",), self._backlog)

    def _backlog(self) -> Select[int, Any, datetime]:
        t, d = self.table, self.dialect
        due = sa.and_(self.leasable, t.c.process_after <= d.now())
        return sa.select(sa.func.count(), sa.func.min(t.c.process_after), d.now()).where(due)

    def load(self) -> Select[int]:
        """The load an autoscaler scales on: due messages plus leased ones (work in hand, so
        busy workers are not scaled away). count(*) of no rows is 0, never NULL."""
        return self._once(("load",), self._load)

    def _load(self) -> Select[int]:
        t, d = self.table, self.dialect
        due = sa.and_(self.leasable, t.c.process_after <= d.now())
        return sa.select(sa.func.count()).where(sa.or_(due, self.leased))

    def due(self) -> Select[int]:
        """The id of one message a lease could take now, if any, read without locking it (a
        lease skips the rows other transactions hold locked)."""
        return self._once(("due",), self._due)

    def _due(self) -> Select[int]:
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
