"""The message lifecycle of one queue: enqueue, lease, complete, fail, sweep, fix, inspect.

Each operation is one transaction and, on the hot paths, one statement per batch: a lease is a
single UPDATE ... RETURNING over a locked candidate subquery; enqueues, completions and failures
take their per-message values as arrays on PostgreSQL (`per_row`). The hot statements are built
once per table. Built-in statuses appear as SQL literals so that the partial indexes on them
serve prepared (generic) plans; everything user-supplied is a bound parameter.
"""

from __future__ import annotations

import os
import random
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from . import health, names, predicate
from .errors import Conflict, InvalidInput, MessageNotFound
from .models import (
    MAX_ID,
    MAX_PRIORITY,
    MAX_SECONDS,
    Completion,
    Enqueued,
    Failure,
    LeaseBatch,
    Message,
    NewMessage,
    QueueStats,
    Settled,
    Swept,
    check_json,
    check_text,
    retry_delay,
)
from .per_row import PerRow
from .schema import UtcDateTime, lease_index_name

if TYPE_CHECKING:
    from .database import Database
    from .spec import QueueSpec

MAX_LEASE_BATCH = 10_000
PURGE_BATCH = 5_000
S = TypeVar("S")

# Per-message parameters of the hot statements (see per_row.py).
_HELD: list[sa.ColumnClause[Any]] = [
    sa.column("b_id", sa.BigInteger()),
    sa.column("b_version", sa.Integer()),
    sa.column("b_cid", sa.String()),
]


def _literal(status: str) -> sa.ColumnElement[str]:
    """A built-in status as SQL text, never a user value: partial indexes match it."""
    assert status in names.BUILT_IN
    return sa.literal_column(f"'{status}'", sa.String)


def _bind(name: str, type_: Any = None) -> sa.BindParameter[Any]:
    return sa.bindparam(name, type_=type_)


class Queue:
    """A handle on one queue table. Cheap to create; safe to share between threads."""

    def __init__(self, database: Database, name: str, table: sa.Table, spec: QueueSpec) -> None:
        self.database = database
        self.name = name
        self.table = table
        self.spec = spec
        self.dialect = database.dialect
        t = table
        self._leasable = t.c.status.in_([_literal(names.PENDING), _literal(names.SLEEPING)])
        self._leased = t.c.status == _literal(names.LEASED)
        assert [c.name for c in t.c] == list(Message.__dataclass_fields__)  # Message(*row)

    def _built(self, key: tuple[Any, ...], build: Callable[[], S]) -> S:
        """A hot statement, built once per table (building costs more than running it)."""
        key = (self.table.name, *key)
        statement: S | None = self.database.statements.get(key)
        if statement is None:
            statement = self.database.statements[key] = build()
        return statement

    def __repr__(self) -> str:
        return f"Queue({self.name!r}, table={self.table.name!r}, db={self.database.shown_url!r})"

    # --- enqueue ----------------------------------------------------------------------------

    def enqueue(self, message: Any, **options: Any) -> Enqueued:
        """Enqueue one message: `enqueue({"OrderId": 1}, message_id="1", after=30)`."""
        return self.enqueue_many([NewMessage(message=message, **options)])[0]

    def enqueue_many(self, messages: Sequence[NewMessage]) -> list[Enqueued]:
        """Enqueue a batch in one transaction: one INSERT per round (an upsert with identities).

        A messageId that appears several times in one batch is applied in order, as if the
        messages had been enqueued one after the other.
        """
        if not messages:
            return []
        now = datetime.now(UTC)
        results: list[Enqueued | None] = [None] * len(messages)
        try:
            with self.database.transaction() as connection:
                for round_indexes in _rounds_of_unique_ids(messages):
                    self._enqueue_round(connection, messages, round_indexes, results, now)
        except (sa.exc.IntegrityError, sa.exc.ProgrammingError, sa.exc.OperationalError):
            self.database.default_status_of(self.name)  # QueueNotFound if it was deleted
            raise
        return [result for result in results if result is not None]

    def _enqueue_round(
        self,
        connection: Connection,
        messages: Sequence[NewMessage],
        round_indexes: list[int],
        results: list[Enqueued | None],
        now: datetime,
    ) -> None:
        """One statement for messages with distinct identities; sends NOTIFY on PostgreSQL."""
        upsert, per_row = self._built(
            ("upsert", self.spec.idempotent), lambda: self._insert_statement(upsert=True)
        )
        insert, _ = self._built(("insert",), lambda: self._insert_statement(upsert=False))
        # Upsert identities in one order everywhere so concurrent batches cannot deadlock.
        round_indexes.sort(key=lambda i: messages[i].message_id or "")
        tracking_ids = _random_uuids(len(round_indexes))
        rows = [
            _row(messages[i], now, tracking_id)
            for i, tracking_id in zip(round_indexes, tracking_ids, strict=True)
        ]
        identities = any(messages[i].message_id for i in round_indexes)
        statement = upsert if identities else insert  # no conflict possible without
        returned = connection.execute(statement, per_row.params(rows, {"b_queue": self.name})).all()
        by_tracking = {row.tracking_id: row for row in returned}
        by_message_id = {row.message_id: row for row in returned if row.message_id}
        for index, row_params in zip(round_indexes, rows, strict=True):
            new = messages[index]
            hit = (
                by_message_id.get(new.message_id)
                if new.message_id
                else by_tracking.get(row_params["b_tracking_id"])
            )
            results[index] = _enqueued(new, hit)

    def _insert_statement(self, upsert: bool) -> tuple[sa.Insert, PerRow]:
        t, d = self.table, self.dialect
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
                sa.column("b_at", UtcDateTime()),
                sa.column("b_after", sa.Float()),
                sa.column("b_expires_at", UtcDateTime()),
                sa.column("b_expires_after", sa.Float()),
                sa.column("b_tracking_id", t.c.tracking_id.type),
            ],
        )
        b = per_row.c
        registry = self.database.registry
        default_status = (
            sa.select(registry.c.default_status)
            .where(registry.c.name == sa.bindparam("b_queue", type_=sa.String()))
            .scalar_subquery()
        )
        # NULL (refused by the column) when the queue was deleted, even with an explicit status.
        status = sa.case(
            (default_status.is_(None), sa.null()),
            else_=sa.func.coalesce(b["b_status"], default_status),
        )
        values: dict[str, Any] = {
            "message_id": b["b_message_id"],
            "status": sa.case(
                (
                    sa.and_(b["b_scheduled"], status == _literal(names.PENDING)),
                    _literal(names.SLEEPING),
                ),
                else_=status,
            ),
            "priority": b["b_priority"],
            "message": sa.func.coalesce(b["b_message"], _json_null(t)),
            "headers": b["b_headers"],
            "version": sa.literal_column("1"),
            "attempts": sa.literal_column("0"),
            "process_after": sa.func.coalesce(b["b_at"], d.seconds_from_now(b["b_after"])),
            "expires_at": sa.func.coalesce(
                b["b_expires_at"], d.seconds_from_now(b["b_expires_after"])
            ),
            "tracking_id": b["b_tracking_id"],
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
            self._leased, new.status.in_([_literal(names.PENDING), _literal(names.SLEEPING)])
        )
        set_ = {
            "message": new.message,
            "headers": new.headers,
            "priority": new.priority,
            "process_after": new.process_after,
            "expires_at": new.expires_at,
            "version": t.c.version + 1,
            "status": sa.case((keeps_lease, t.c.status), else_=new.status),
            # 0 also marks a Leased row whose new version was never tried (see sweep).
            "attempts": 0,
            "updated_at": now,
        }
        changed = None
        if self.spec.idempotent:
            changed = sa.cast(t.c.message, sa.Text) != sa.cast(new.message, sa.Text)
        statement = d.on_conflict_message_id(insert, set_, changed)
        return statement.returning(*returning), per_row

    # --- lease ------------------------------------------------------------------------------

    def lease(
        self,
        owner: str,
        batch_size: int,
        lease_seconds: float | None = None,
        correlation_id: str | None = None,
    ) -> LeaseBatch:
        """Atomically take up to `batch_size` due messages: highest priority, then oldest."""
        with self.database.transaction() as connection:
            return self._lease(connection, owner, batch_size, lease_seconds, correlation_id)

    def settle(self, owner: str, outcomes: Sequence[Completion | Failure]) -> Settled:
        """Record completions and failures together, in one transaction."""
        with self.database.transaction() as connection:
            return self._settle(connection, owner, outcomes)

    def settle_and_lease(
        self,
        owner: str,
        outcomes: Sequence[Completion | Failure],
        batch_size: int,
        lease_seconds: float | None = None,
    ) -> tuple[Settled, LeaseBatch]:
        """Record outcomes and lease the next batch in one transaction (a worker's loop)."""
        with self.database.transaction() as connection:
            settled = self._settle(connection, owner, outcomes)
            return settled, self._lease(connection, owner, batch_size, lease_seconds, None)

    def _lease(
        self,
        connection: Connection,
        owner: str,
        batch_size: int,
        lease_seconds: float | None,
        correlation_id: str | None,
    ) -> LeaseBatch:
        if not 1 <= batch_size <= MAX_LEASE_BATCH:
            raise InvalidInput(f"batch size {batch_size} out of range 1..{MAX_LEASE_BATCH}")
        correlation_id = correlation_id or uuid.uuid4().hex
        seconds = self._lease_seconds(lease_seconds)
        statement = self._built(("lease",), self._lease_statement)
        rows = connection.execute(
            statement,
            {"b_n": batch_size, "b_lease": seconds, "b_owner": owner, "b_cid": correlation_id},
        ).all()
        messages = sorted(
            (Message(*row) for row in rows), key=lambda m: (-m.priority, m.process_after, m.id)
        )
        return LeaseBatch(correlation_id, owner, messages)

    def _lease_seconds(self, lease_seconds: float | None) -> float:
        seconds = float(lease_seconds if lease_seconds is not None else self.spec.lease_seconds)
        if not 0 < seconds <= MAX_SECONDS:
            raise InvalidInput(
                f"lease of {seconds:g}s out of range: more than 0, at most 100 years"
            )
        return seconds

    def _lease_statement(self) -> sa.Update:
        t, d = self.table, self.dialect
        now = d.now()
        candidates = (
            sa.select(t.c.id)
            .where(
                self._leasable,
                t.c.process_after <= now,
                sa.or_(t.c.expires_at.is_(None), t.c.expires_at > now),
            )
            .order_by(t.c.priority.desc(), t.c.process_after, t.c.id)
            .limit(_bind("b_n", sa.Integer()))
        )
        return (
            sa.update(t)
            .where(
                t.c.id.in_(
                    d.lock_candidates(candidates, lease_index_name(t.name)).scalar_subquery()
                )
            )
            .values(
                status=_literal(names.LEASED),
                attempts=t.c.attempts + 1,
                lease_expires_at=d.seconds_from_now(_bind("b_lease", sa.Float())),
                lease_owner=_bind("b_owner", sa.String()),
                correlation_id=_bind("b_cid", sa.String()),
                updated_at=now,
            )
            .returning(*t.c)
        )

    def extend(
        self, owner: str, ids: Iterable[int], lease_seconds: float | None = None
    ) -> set[int]:
        """Extend leases still held by `owner`; returns the ids still held (others were lost)."""
        ids = list(ids)
        if not ids:
            return set()
        t, d = self.table, self.dialect
        seconds = self._lease_seconds(lease_seconds)
        statement = (
            sa.update(t)
            .where(t.c.id.in_(ids), self._leased, t.c.lease_owner == owner)
            .values(lease_expires_at=d.seconds_from_now(sa.literal(seconds)), updated_at=d.now())
            .returning(t.c.id)
        )
        with self.database.transaction() as connection:
            return set(connection.execute(statement).scalars())

    def held(self, owner: str, ids: Iterable[int]) -> set[int]:
        """Which of these messages `owner` still holds; cancelled or swept ones drop out."""
        ids = list(ids)
        if not ids:
            return set()
        t = self.table
        statement = sa.select(t.c.id).where(t.c.id.in_(ids), self._leased, t.c.lease_owner == owner)
        with self.database.transaction() as connection:
            return set(connection.execute(statement).scalars())

    def release(self, owner: str, ids: Iterable[int]) -> int:
        """Give back leased messages that were never started: Pending again, attempt not counted."""
        ids = list(ids)
        if not ids:
            return 0
        t, d = self.table, self.dialect
        statement = (
            sa.update(t)
            .where(t.c.id.in_(ids), self._leased, t.c.lease_owner == owner)
            .values(
                status=_literal(names.PENDING),
                attempts=sa.case((t.c.attempts > 0, t.c.attempts - 1), else_=0),
                lease_expires_at=None,
                updated_at=d.now(),
            )
        )
        with self.database.transaction() as connection:
            released = int(connection.execute(statement).rowcount)
            if released:
                self.dialect.notify(connection, self.table.name)
            return released

    # --- outcomes ---------------------------------------------------------------------------

    def complete(self, owner: str, completions: Sequence[Completion]) -> Settled:
        """Record successes. Deletes or marks Processed, or reschedules (`process_again_at`).

        A message whose identity got a newer version while it was leased goes back to the
        queue's default status with the new body; the processed body becomes its previous one.
        """
        with self.database.transaction() as connection:
            return self._complete(connection, owner, completions)

    def _settle(
        self, connection: Connection, owner: str, outcomes: Sequence[Completion | Failure]
    ) -> Settled:
        completions = [o for o in outcomes if isinstance(o, Completion)]
        failures = [o for o in outcomes if isinstance(o, Failure)]
        settled = Settled()
        if completions:
            settled = self._complete(connection, owner, completions)
        if failures:
            settled = settled + self._fail(connection, owner, failures)
        return settled

    def _complete(
        self, connection: Connection, owner: str, completions: Sequence[Completion]
    ) -> Settled:
        settled = Settled()
        keep = self.spec.keep_processed != timedelta(0)
        groups: dict[str, list[Completion]] = {"delete": [], "processed": [], "again": []}
        for c in completions:
            groups["again" if c.process_again_at else ("processed" if keep else "delete")].append(c)
        if groups["delete"]:
            delete, per_row = self._built(("delete",), self._delete_done)
            rows = [_held(c.message) for c in groups["delete"]]
            settled.deleted = self._run(connection, delete, per_row, rows, owner)
        for kind, status in (("processed", names.PROCESSED), ("again", names.SLEEPING)):
            if not groups[kind]:
                continue
            statement, per_row = self._built((kind,), lambda: self._finish(status))  # noqa: B023
            rows = [
                _held(c.message)
                | {
                    "b_again": c.process_again_at,
                    "b_result": c.result,
                    "b_progress": c.progress,
                }
                for c in groups[kind]
            ]
            count = self._run(connection, statement, per_row, rows, owner)
            if kind == "processed":
                settled.processed = count
            else:
                settled.rescheduled = count
        settled_count = settled.deleted + settled.processed + settled.rescheduled
        if settled_count < len(completions):  # rare: a new version arrived, or a lease was lost
            newer = [_held(c.message) | {"b_previous": c.message.message} for c in completions]
            settled.requeued_newer_version = self._requeue_newer(connection, newer, owner, True)
        settled.lease_lost = len(completions) - (
            settled.deleted
            + settled.processed
            + settled.rescheduled
            + settled.requeued_newer_version
        )
        return settled

    def fail(self, owner: str, failures: Sequence[Failure]) -> Settled:
        """Record failures: retry after the back-off, or Error once attempts reach maxAttempts."""
        with self.database.transaction() as connection:
            return self._fail(connection, owner, failures)

    def _fail(self, connection: Connection, owner: str, failures: Sequence[Failure]) -> Settled:
        settled = Settled()
        retry = self.spec.retry
        rows = []
        for f in failures:
            delay = retry_delay(
                f.message.attempts, retry.delay_seconds, retry.backoff, retry.max_delay_seconds
            )
            delay *= 1 + retry.jitter * (2 * random.random() - 1)
            give_up = f.permanent or f.message.attempts >= self.spec.max_attempts
            rows.append(
                _held(f.message)
                | {"b_error": _storable(f.error), "b_give_up": give_up, "b_delay": round(delay, 3)}
            )
            if give_up:
                settled.errored += 1
            else:
                settled.retrying += 1
        statement, per_row = self._built(("fail",), self._fail_statement)
        failed = self._run(connection, statement, per_row, rows, owner) if rows else 0
        if failed < len(failures):  # rare: a new version arrived, or a lease was lost
            newer = [_held(f.message) | {"b_previous": None} for f in failures]
            settled.requeued_newer_version = self._requeue_newer(connection, newer, owner, False)
        settled.lease_lost = len(failures) - failed - settled.requeued_newer_version
        if settled.lease_lost or settled.requeued_newer_version:
            # Counts of retrying/errored are only certain when every row was still ours.
            settled.retrying = settled.errored = 0
        return settled

    @staticmethod
    def _run(
        connection: Connection,
        statement: sa.Executable,
        per_row: PerRow,
        rows: list[dict[str, Any]],
        owner: str,
    ) -> int:
        return int(connection.execute(statement, per_row.params(rows, {"b_owner": owner})).rowcount)

    def _held_by(self, per_row: PerRow, same_version: bool = True) -> sa.ColumnElement[bool]:
        """The row is still leased by this owner in this lease batch (at the version leased)."""
        t, b = self.table, per_row.c
        version = t.c.version == b["b_version"] if same_version else t.c.version != b["b_version"]
        return sa.and_(
            t.c.id == b["b_id"],
            version,
            t.c.lease_owner == _bind("b_owner", sa.String()),
            t.c.correlation_id == b["b_cid"],
            self._leased,
        )

    def _delete_done(self) -> tuple[sa.Delete, PerRow]:
        per_row = PerRow(self.dialect, _HELD)
        return sa.delete(self.table).where(self._held_by(per_row)), per_row

    def _finish(self, status: str) -> tuple[sa.Update, PerRow]:
        t, d = self.table, self.dialect
        per_row = PerRow(
            d,
            [
                *_HELD,
                sa.column("b_again", UtcDateTime()),
                sa.column("b_result", t.c.result.type),
                sa.column("b_progress", t.c.progress.type),
            ],
        )
        b = per_row.c
        values: dict[str, Any] = {
            "status": _literal(status),
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
        return sa.update(t).where(self._held_by(per_row)).values(**values), per_row

    def _fail_statement(self) -> tuple[sa.Update, PerRow]:
        t, d = self.table, self.dialect
        per_row = PerRow(
            d,
            [
                *_HELD,
                sa.column("b_error", sa.Text()),
                sa.column("b_give_up", sa.Boolean()),
                sa.column("b_delay", sa.Float()),
            ],
        )
        b = per_row.c
        give_up = b["b_give_up"]
        statement = (
            sa.update(t)
            .where(self._held_by(per_row))
            .values(
                status=sa.case((give_up, _literal(names.ERROR)), else_=_literal(names.SLEEPING)),
                process_after=sa.case(
                    (give_up, t.c.process_after), else_=d.seconds_from_now(b["b_delay"])
                ),
                last_error=b["b_error"],
                lease_expires_at=None,
                updated_at=d.now(),
            )
        )
        return statement, per_row

    def _requeue_newer(
        self, connection: Connection, rows: list[dict[str, Any]], owner: str, ok: bool
    ) -> int:
        """Rows still leased by us at another version got a new body while we worked on it."""
        if not rows:
            return 0
        t, d = self.table, self.dialect
        per_row = PerRow(d, [*_HELD, sa.column("b_previous", t.c.previous_message.type)])
        default_status = self.database.default_status(connection, self.name)
        status: sa.ColumnElement[Any] = sa.literal(default_status)
        if default_status == names.PENDING:
            status = sa.case((t.c.process_after > d.now(), _literal(names.SLEEPING)), else_=status)
        values: dict[str, Any] = {
            "status": status,
            "attempts": 0,
            "lease_expires_at": None,
            "updated_at": d.now(),
        }
        if ok:
            values["previous_message"] = sa.case(
                (t.c.message_id.is_not(None), per_row.c["b_previous"]), else_=t.c.previous_message
            )
        statement = sa.update(t).where(self._held_by(per_row, same_version=False)).values(**values)
        return self._run(connection, statement, per_row, rows, owner)

    def report_progress(self, message_id: int, progress: Any) -> None:
        """Store a handler's progress while it runs (readable by tracking id)."""
        t = self.table
        statement = (
            sa.update(t)
            .where(t.c.id == message_id)
            .values(progress=sa.bindparam("b_progress", progress, type_=t.c.progress.type))
        )
        with self.database.transaction() as connection:
            if not connection.execute(statement).rowcount:
                raise MessageNotFound(f"no message with id {message_id} in queue {self.name!r}")

    def cancel(self, tracking_id: uuid.UUID | str) -> Message:
        """Cancel by tracking id. A running handler learns it when its lease extension fails."""
        tracking = _uuid(tracking_id)
        t, d = self.table, self.dialect
        statement = (
            sa.update(t)
            .where(
                t.c.tracking_id == tracking,
                t.c.status.not_in([_literal(s) for s in names.FINAL]),
            )
            .values(status=_literal(names.CANCELLED), lease_expires_at=None, updated_at=d.now())
            .returning(*t.c)
        )
        with self.database.transaction() as connection:
            row = connection.execute(statement).first()
            if row is None:
                current = self._by_tracking_id(connection, tracking)
                raise Conflict(
                    f"message with tracking id {tracking} is already {current.status}; "
                    "only unfinished messages can be cancelled"
                )
        return Message.from_row(row._mapping)

    # --- housekeeping -----------------------------------------------------------------------

    def sweep(self) -> Swept:
        """Expired leases follow onLeaseExpired; expired messages become Expired."""
        t, d = self.table, self.dialect
        now = d.now()
        lapsed = sa.and_(self._leased, t.c.lease_expires_at < now)
        note = (
            sa.literal("lease expired; held by ", sa.Text)
            + sa.func.coalesce(t.c.lease_owner, "?")
            + sa.literal(", correlation id ", sa.Text)
            + sa.func.coalesce(t.c.correlation_id, "?")
        )
        new_status: sa.ColumnElement[Any]
        untried_new_version = t.c.attempts == 0  # enqueued while the old one was leased
        if self.spec.on_lease_expired == "Retry":
            give_up = sa.and_(t.c.attempts >= self.spec.max_attempts, ~untried_new_version)
            new_status = sa.case((give_up, _literal(names.ERROR)), else_=_literal(names.PENDING))
        else:
            new_status = sa.case(
                (untried_new_version, _literal(names.PENDING)), else_=_literal(names.ABANDONED)
            )
        leases = (
            sa.update(t)
            .where(lapsed)
            .values(status=new_status, last_error=note, lease_expires_at=None, updated_at=now)
            .returning(t.c.status)
        )
        expired = (
            sa.update(t)
            .where(self._leasable, t.c.expires_at <= now)
            .values(status=_literal(names.EXPIRED), updated_at=now)
            .returning(t.c.id)
        )
        with self.database.transaction() as connection:
            outcomes = Counter(connection.execute(leases).scalars())
            expired_count = len(connection.execute(expired).all())
        return Swept(
            abandoned=outcomes[names.ABANDONED],
            retried=outcomes[names.PENDING],
            errored=outcomes[names.ERROR],
            expired=expired_count,
        )

    def vacuum(self) -> bool:
        """Reclaim the space of finished messages if the table has many dead rows (PostgreSQL;
        a no-op elsewhere). Workers call it every few seconds; True when it vacuumed."""
        return self.dialect.vacuum_if_bloated(self.database.engine, self.table)

    def purge(
        self, statuses: Sequence[str] | None = None, older_than: timedelta | None = None
    ) -> int:
        """Delete finished messages past retention, in bounded batches.

        Default: Processed messages older than keepProcessedFor (nothing when kept forever).
        """
        if statuses is None:
            statuses = [names.PROCESSED]
            older_than = older_than if older_than is not None else self.spec.keep_processed
            if older_than is None:
                return 0
        for status in statuses:
            names.status(status)
            if status == names.LEASED:
                raise InvalidInput("leased messages cannot be purged; they are being processed")
        t, d = self.table, self.dialect
        condition: sa.ColumnElement[bool] = t.c.status.in_(list(statuses))
        if older_than is not None:
            age = sa.func.coalesce(t.c.processed_at, t.c.updated_at)
            condition = sa.and_(
                condition, age < d.seconds_from_now(sa.literal(-older_than.total_seconds()))
            )
        batch = sa.select(t.c.id).where(condition).limit(PURGE_BATCH).scalar_subquery()
        statement = sa.delete(t).where(t.c.id.in_(batch))
        total = 0
        while True:
            with self.database.transaction() as connection:
                deleted = int(connection.execute(statement).rowcount)
            total += deleted
            if deleted < PURGE_BATCH:
                return total

    # --- people and tools -------------------------------------------------------------------

    def set_status(
        self,
        status: str,
        *,
        ids: Sequence[int] | None = None,
        from_status: str | None = None,
        where: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> int:
        """Set a status on messages chosen by ids, current status and/or predicate.

        Leased messages are left alone unless `force`. Pending resets attempts and makes the
        message due now: a person retrying a message gives it a fresh start.
        Returns the number of messages changed (or that would change, with `dry_run`).
        """
        names.settable_status(status)
        t, d = self.table, self.dialect
        chosen = self._selection(ids=ids, status=from_status, where=where)
        if chosen is None:
            raise InvalidInput("choose messages by id, by current status or by predicate")
        condition = sa.and_(chosen, t.c.status != status)
        if not force:
            condition = sa.and_(condition, t.c.status != _literal(names.LEASED))
        if dry_run:
            with self.database.transaction() as connection:
                count = connection.execute(sa.select(sa.func.count()).where(condition))
                return int(count.scalar_one())
        values: dict[str, Any] = {"status": status, "updated_at": d.now()}
        if force:
            values["lease_expires_at"] = None
        if status == names.PENDING:
            values.update(self._fresh_start())
        with self.database.transaction() as connection:
            changed = int(
                connection.execute(sa.update(t).where(condition).values(**values)).rowcount
            )
            if changed and status == names.PENDING:
                self.dialect.notify(connection, self.table.name)
            return changed

    def edit(
        self,
        message_id: int,
        *,
        body: Any = None,
        status: str | None = None,
        priority: int | None = None,
        force: bool = False,
    ) -> Message:
        """Fix one message by hand: its body, status or priority (not while Leased, unless forced).

        A new body is a new version, as if enqueued: a worker still holding the old one requeues
        it when it finishes.
        """
        _existing_id(message_id, self.name)
        t, d = self.table, self.dialect
        values: dict[str, Any] = {"updated_at": d.now()}
        if body is not None:
            check_json(body)
            values["message"] = sa.bindparam("b_body", body, type_=t.c.message.type)
            # A new version: a worker holding the old one requeues this one when it finishes.
            values["version"] = t.c.version + 1
        if priority is not None:
            if not -MAX_PRIORITY - 1 <= priority <= MAX_PRIORITY:
                raise InvalidInput(f"priority {priority} out of range -32768..32767")
            values["priority"] = priority
        if status is not None:
            values["status"] = names.settable_status(status)
            if status == names.PENDING:
                values.update(self._fresh_start())
            if force:
                values["lease_expires_at"] = None
        condition: sa.ColumnElement[bool] = t.c.id == message_id
        if not force:
            condition = sa.and_(condition, t.c.status != _literal(names.LEASED))
        with self.database.transaction() as connection:
            row = connection.execute(
                sa.update(t).where(condition).values(**values).returning(*t.c)
            ).first()
            if row is None:
                current = self._get(connection, message_id)
                raise Conflict(
                    f"message {message_id} is {current.status}: it is being processed; "
                    "use force to change it anyway"
                )
        return Message.from_row(row._mapping)

    def _fresh_start(self) -> dict[str, Any]:
        """A person retrying a message: due now, no attempts counted, no expiry already past."""
        t, d = self.table, self.dialect
        now = d.now()
        return {
            "attempts": 0,
            "process_after": now,
            "expires_at": sa.case((t.c.expires_at <= now, None), else_=t.c.expires_at),
        }

    def delete(self, message_id: int, force: bool = False) -> None:
        _existing_id(message_id, self.name)
        t = self.table
        condition: sa.ColumnElement[bool] = t.c.id == message_id
        if not force:
            condition = sa.and_(condition, t.c.status != _literal(names.LEASED))
        with self.database.transaction() as connection:
            if not connection.execute(sa.delete(t).where(condition)).rowcount:
                current = self._get(connection, message_id)
                raise Conflict(
                    f"message {message_id} is {current.status}: it is being processed; "
                    "use force to delete it anyway"
                )

    # --- reading ----------------------------------------------------------------------------

    def get(self, message_id: int) -> Message:
        _existing_id(message_id, self.name)
        with self.database.transaction() as connection:
            return self._get(connection, message_id)

    def get_by_tracking_id(self, tracking_id: uuid.UUID | str) -> Message:
        with self.database.transaction() as connection:
            return self._by_tracking_id(connection, _uuid(tracking_id))

    def _get(self, connection: Connection, message_id: int) -> Message:
        row = connection.execute(sa.select(self.table).where(self.table.c.id == message_id)).first()
        if row is None:
            raise MessageNotFound(f"no message with id {message_id} in queue {self.name!r}")
        return Message.from_row(row._mapping)

    def _by_tracking_id(self, connection: Connection, tracking_id: uuid.UUID) -> Message:
        t = self.table
        row = connection.execute(sa.select(t).where(t.c.tracking_id == tracking_id)).first()
        if row is None:
            raise MessageNotFound(f"no message with tracking id {tracking_id} in {self.name!r}")
        return Message.from_row(row._mapping)

    def messages(
        self,
        *,
        status: str | None = None,
        where: str | None = None,
        message_id: str | None = None,
        after_id: int | None = None,
        limit: int = 100,
        order: Literal["asc", "desc"] = "asc",
    ) -> list[Message]:
        """A page of messages in id order; pass the last id as `after_id` for the next page."""
        if not 1 <= limit <= 10_000:
            raise InvalidInput(f"limit {limit} out of range 1..10000")
        t = self.table
        condition = self._selection(status=status, where=where, message_id=message_id)
        statement = sa.select(t)
        if condition is not None:
            statement = statement.where(condition)
        if after_id is not None:
            if not 0 <= after_id <= MAX_ID:
                raise InvalidInput(f"after_id {after_id} out of range 0..{MAX_ID}")
            statement = statement.where(t.c.id > after_id if order == "asc" else t.c.id < after_id)
        statement = statement.order_by(t.c.id if order == "asc" else t.c.id.desc()).limit(limit)
        with self.database.transaction() as connection:
            return [Message.from_row(row._mapping) for row in connection.execute(statement)]

    def count(self, *, status: str | None = None, where: str | None = None) -> int:
        condition = self._selection(status=status, where=where)
        statement = sa.select(sa.func.count()).select_from(self.table)
        if condition is not None:
            statement = statement.where(condition)
        with self.database.transaction() as connection:
            return int(connection.execute(statement).scalar_one())

    def _selection(
        self,
        *,
        ids: Sequence[int] | None = None,
        status: str | None = None,
        where: str | None = None,
        message_id: str | None = None,
    ) -> sa.ColumnElement[bool] | None:
        t = self.table
        parts: list[sa.ColumnElement[bool]] = []
        if ids is not None:
            if not ids:
                raise InvalidInput("no message ids given")
            if not all(1 <= int(i) <= MAX_ID for i in ids):
                raise InvalidInput(f"message ids are whole numbers from 1 to {MAX_ID}")
            parts.append(t.c.id.in_([int(i) for i in ids]))
        if status is not None:
            parts.append(t.c.status == names.status(status))
        if message_id is not None:
            parts.append(t.c.message_id == check_text(message_id))
        if where is not None:
            parts.append(predicate.to_sql(predicate.parse(where), t.c.message, self.dialect))
        return sa.and_(*parts) if parts else None

    def stats(self) -> QueueStats:
        """Counts per status, backlog and oldest due message, served by indexes.

        Counts of the statuses that drive work (Pending, Sleeping, Leased, Error, Abandoned)
        are always exact; on PostgreSQL a status with more than 100,000 rows (Processed, in a
        queue that keeps history) may be an estimate, listed in `approximate`.
        """
        t, d = self.table, self.dialect
        due = sa.and_(self._leasable, t.c.process_after <= d.now())
        backlog = sa.select(sa.func.count(), sa.func.min(t.c.process_after), d.now()).where(due)
        exact = (names.PENDING, names.SLEEPING, names.LEASED, names.ERROR, names.ABANDONED)
        with self.database.transaction() as connection:
            counts, approximate = d.count_by_status(connection, t, exact)
            waiting, oldest, now = connection.execute(backlog).one()
        oldest_seconds = 0.0
        if oldest is not None:
            oldest = UtcDateTime().process_result_value(oldest, self.database.engine.dialect)
            now = UtcDateTime().process_result_value(now, self.database.engine.dialect)
            assert oldest is not None and now is not None
            oldest_seconds = max((now - oldest).total_seconds(), 0.0)
        state, reasons = health.evaluate(self.spec.health, counts, oldest_seconds)
        return QueueStats(
            queue=self.name,
            counts=counts,
            backlog=int(waiting),
            leased=counts.get(names.LEASED, 0),
            oldest_pending_seconds=oldest_seconds,
            health=state,
            health_reasons=reasons,
            approximate=sorted(approximate),
        )


def _rounds_of_unique_ids(messages: Sequence[NewMessage]) -> list[list[int]]:
    """Split a batch so no messageId appears twice in one statement, keeping order per id."""
    rounds: list[list[int]] = []
    seen: Counter[str] = Counter()
    for index, new in enumerate(messages):
        round_number = 0
        if new.message_id is not None:
            round_number = seen[new.message_id]
            seen[new.message_id] += 1
        while len(rounds) <= round_number:
            rounds.append([])
        rounds[round_number].append(index)
    return rounds


def _row(new: NewMessage, now: datetime, tracking_id: uuid.UUID) -> dict[str, Any]:
    """A new message's per-row parameters; its status None means the queue's default status,
    read by the statement itself (it may change at runtime)."""
    return {
        "b_message_id": new.message_id,
        "b_status": new.status,
        "b_scheduled": (new.at is not None and new.at > now) or (new.after or 0) > 0,
        "b_priority": new.priority,
        "b_message": new.message,
        "b_headers": new.headers,
        "b_at": new.at,
        "b_after": new.after or 0.0,
        "b_expires_at": new.expires_at,
        "b_expires_after": new.expires_after,
        "b_tracking_id": tracking_id,
    }


def _storable(text: str) -> str:
    """Error text as every engine stores it: NUL and unpaired surrogates escaped."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def _random_uuids(count: int) -> list[uuid.UUID]:
    """Version-4 UUIDs, as uuid4() makes them, from one read of the system's random source."""
    data = os.urandom(16 * count)
    return [uuid.UUID(bytes=data[i : i + 16], version=4) for i in range(0, 16 * count, 16)]


def _json_null(table: sa.Table) -> sa.ColumnElement[Any]:
    """A JSON null (a message body may be JSON null; per-row parameters make None SQL NULL)."""
    return sa.type_coerce(sa.literal_column("'null'"), table.c.message.type)


def _held(message: Message) -> dict[str, Any]:
    """Identify the lease an outcome belongs to: the row, its version and the lease batch
    (a message leased again later, even by the same worker, belongs to another batch)."""
    return {"b_id": message.id, "b_version": message.version, "b_cid": message.correlation_id}


def _enqueued(new: NewMessage, row: Any) -> Enqueued:
    if row is None:
        return Enqueued(None, None, new.message_id, "discarded", None, None)
    outcome: Literal["inserted", "updated"] = "inserted" if row.version == 1 else "updated"
    return Enqueued(row.id, row.tracking_id, row.message_id, outcome, row.status, row.version)


def _existing_id(message_id: int, queue: str) -> None:
    """Outside BIGINT no message can exist; the driver would fail on the number instead."""
    if not 1 <= message_id <= MAX_ID:
        raise MessageNotFound(f"no message with id {message_id} in queue {queue!r}")


def _uuid(value: uuid.UUID | str) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise InvalidInput(f"invalid tracking id {str(value)[:80]!r}: expected a UUID") from None
