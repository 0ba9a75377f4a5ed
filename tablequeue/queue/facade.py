"""`Queue`: a handle on one queue table, delegating each operation to its module.

Each operation is one transaction and, on the hot paths, one statement per batch (the
dialect's whole operations over the statements of `dialects/queries/`, built once per table).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import sqlalchemy as sa
from typing_extensions import deprecated

from ..dialects import Dialect
from ..limits import PURGE_BATCH
from ..models import (
    Attempt,
    Completion,
    Enqueued,
    Failure,
    Fired,
    LeaseBatch,
    Message,
    NewMessage,
    QueueStats,
    ScheduleView,
    Settled,
    Swept,
)
from ..spec import QueueSpec
from ..storage import Storage
from . import admin, enqueue, history, housekeeping_lease, read, retention, settle, status_guard
from . import schedules as recurring
from .context import QueueContext
from .dedupe import rule as dedupe_rule
from .search import Search


class Queue:
    """A handle on one queue table. Cheap to create; safe to share between threads."""

    def __init__(self, storage: Storage, name: str, table: sa.Table, spec: QueueSpec) -> None:
        self.storage = storage
        """The database's engine and transactions, as the queue's operations use them."""
        self.name = name
        self.table = table
        self.spec = spec
        self.dialect: Dialect = storage.dialect
        self._queue = QueueContext(storage, name, table, spec)
        assert [c.name for c in table.c] == list(Message.__dataclass_fields__)  # Message(*row)

    @property
    @deprecated("Queue.database is deprecated: use storage")
    def database(self) -> Storage:
        """Deprecated (to be removed in the release after next): `storage`."""
        return self.storage

    def __repr__(self) -> str:
        return f"Queue({self.name!r}, table={self.table.name!r}, db={self.storage.shown_url!r})"

    # --- enqueue ----------------------------------------------------------------------------

    def enqueue(
        self,
        message: Any,
        *,
        connection: Any = None,
        dedupe: str | None = None,
        dedupe_window: timedelta | str | float | None = None,
        **options: Any,
    ) -> Enqueued:
        """Enqueue one message: `enqueue({"OrderId": 1}, message_id="1", after=30)`.

        With `connection` (a SQLAlchemy Connection, or a DB-API connection such as psycopg's,
        to this queue's database) the message is written in that connection's transaction:
        it exists once the caller commits, and never if the caller rolls back (the outbox
        pattern); workers are woken only by the commit. `dedupe`: as for `enqueue_many`.
        """
        new = [NewMessage(message=message, **options)]
        return self.enqueue_many(
            new, connection=connection, dedupe=dedupe, dedupe_window=dedupe_window
        )[0]

    def enqueue_many(
        self,
        messages: Sequence[NewMessage | Any],
        *,
        connection: Any = None,
        dedupe: str | None = None,
        dedupe_window: timedelta | str | float | None = None,
    ) -> list[Enqueued]:
        """Enqueue a batch in one transaction: one INSERT per round (an upsert with identities).
        Each item is a `NewMessage` (a body with its options), or a body alone, as `enqueue`
        takes it (`[{"OrderId": "A-1"}, ...]`).

        A messageId that appears several times in one batch is applied in order, as if the
        messages had been enqueued one after the other. `connection`: as for `enqueue`.
        `dedupe` ("replace", "keep" or "window") decides, for this call, what a messageId that
        exists gets instead of the queue's `spec.dedupe`; mode window uses the queue's window
        unless `dedupe_window` (a timedelta, "10m", or seconds) gives the call's own.
        """
        rule = dedupe_rule(self._queue, dedupe, dedupe_window)
        batch = [m if isinstance(m, NewMessage) else NewMessage(message=m) for m in messages]
        return enqueue.enqueue_many(self._queue, batch, connection, rule)

    # --- lease and outcomes -----------------------------------------------------------------

    def lease(
        self,
        owner: str,
        batch_size: int,
        lease_seconds: float | None = None,
        correlation_id: str | None = None,
    ) -> LeaseBatch:
        """Atomically take up to `batch_size` due messages: highest priority, then oldest."""
        return self.storage.in_transaction(
            lambda connection: settle.lease(
                self._queue, connection, owner, batch_size, lease_seconds, correlation_id
            )
        )

    def settle(self, owner: str, outcomes: Sequence[Completion | Failure]) -> Settled:
        """Record completions and failures together, in one transaction."""
        return self.storage.in_transaction(
            lambda connection: settle.settle(self._queue, connection, owner, outcomes)
        )

    def settle_and_lease(
        self,
        owner: str,
        outcomes: Sequence[Completion | Failure],
        batch_size: int,
        lease_seconds: float | None = None,
    ) -> tuple[Settled, LeaseBatch]:
        """Record outcomes and lease the next batch (a worker's loop): in one transaction, or
        on PostgreSQL, for completions on a queue without flow controls, as statements of their
        own (`settle.settle_and_lease`)."""
        return settle.settle_and_lease(self._queue, owner, outcomes, batch_size, lease_seconds)

    def extend(
        self, owner: str, ids: Iterable[int], lease_seconds: float | None = None
    ) -> set[int]:
        """Extend leases still held by `owner`; returns the ids still held (others were lost)."""
        return settle.extend(self._queue, owner, ids, lease_seconds)

    def held(self, owner: str, ids: Iterable[int]) -> set[int]:
        """Which of these messages `owner` still holds; cancelled or swept ones drop out."""
        return settle.held(self._queue, owner, ids)

    def release(self, owner: str, ids: Iterable[int]) -> int:
        """Give back leased messages that were never started: Pending again, attempt not counted."""
        return settle.release(self._queue, owner, ids)

    def release_untracked(self, owner: str, tracked: Iterable[int], since: datetime) -> int:
        """Give back, as `release` does, every message `owner` leased at or after `since` (the
        database clock, e.g. `clock()` when the worker started) that is not among `tracked`:
        the recovery of a worker whose lease committed but whose answer was lost. One
        statement; the number given back."""
        return settle.release_untracked(self._queue, owner, tracked, since)

    def has_due(self) -> bool:
        """Whether a message is due now, read without taking locks: a lease skips the due
        messages other transactions hold locked (a sweep, an enqueue replacing a body), so a
        lease that took nothing does not tell that nothing is due."""
        return read.has_due(self._queue)

    def clock(self) -> datetime:
        """The database's current time (an aware UTC datetime)."""
        return settle.clock(self._queue)

    def complete(self, owner: str, completions: Sequence[Completion]) -> Settled:
        """Record successes. Deletes or marks Processed, or reschedules (`process_again_at`).

        A message whose identity got a newer version while it was leased goes back to the
        queue's default status with the new body; the processed body becomes its previous one.
        """
        return self.storage.in_transaction(
            lambda connection: settle.complete(self._queue, connection, owner, completions)
        )

    def fail(self, owner: str, failures: Sequence[Failure]) -> Settled:
        """Record failures: retry after the back-off, or Error once attempts reach maxAttempts."""
        return self.storage.in_transaction(
            lambda connection: settle.fail(self._queue, connection, owner, failures)
        )

    def report_progress(
        self,
        message_id: int,
        progress: Any,
        *,
        owner: str | None = None,
        correlation_id: str | None = None,
    ) -> None:
        """Store a handler's progress while it runs (readable by tracking id). With `owner` and
        the lease batch's `correlation_id`, only while that lease holds the message (Conflict
        otherwise)."""
        admin.report_progress(self._queue, message_id, progress, owner, correlation_id)

    def cancel(self, tracking_id: uuid.UUID | str) -> Message:
        """Cancel by tracking id. A running handler learns it when its lease extension fails."""
        return admin.cancel(self._queue, tracking_id)

    # --- housekeeping -----------------------------------------------------------------------

    def sweep(self) -> Swept:
        """Expired leases follow onLeaseExpired; expired messages become Expired."""
        return admin.sweep(self._queue)

    def vacuum(self) -> bool:
        """Reclaim the space of finished messages if the table has many dead rows (engines
        with `capabilities.vacuums`; a no-op elsewhere). Workers call it every few seconds;
        True when it vacuumed."""
        return self.dialect.vacuum_if_bloated(self.storage.engine, self.table)

    def purge(
        self, statuses: Sequence[str] | None = None, older_than: timedelta | None = None
    ) -> int:
        """Delete finished messages past retention, in bounded batches.

        Default: Processed messages older than keepProcessedFor (nothing when kept forever).
        """
        return admin.purge(self._queue, statuses, older_than)

    def purge_retained(
        self,
        owner: str,
        lease_seconds: float = housekeeping_lease.HOUSEKEEPING_LEASE_SECONDS,
        batch: int = PURGE_BATCH,
    ) -> retention.Purged | None:
        """One retention round (each final status's keep duration, keepResultsFor, attempts
        left alone, deleted queues' results and attempts) in bounded batches, if `owner` holds
        or takes the queue's housekeeping lease; None when another worker holds it. Workers
        call it every `purge_interval`."""
        return retention.purge_retained(self._queue, owner, lease_seconds, batch)

    def release_housekeeping(self, owner: str) -> None:
        """Give up the housekeeping lease (a worker stopping)."""
        housekeeping_lease.release(self._queue.storage, self.name, owner)

    def housekeeping_holder(self) -> str | None:
        """The worker that holds the housekeeping lease now, if any."""
        return housekeeping_lease.holder(self._queue.storage, self.name)

    def fire_schedules(self) -> list[Fired]:
        """Claim and enqueue the due ticks of the queue's schedules (`spec.schedules`), each
        exactly once whoever else calls it at the same time. Workers call it with their
        housekeeping and the operator on its timer."""
        return recurring.fire_due(self._queue)

    def schedules(self) -> list[ScheduleView]:
        """The queue's declared schedules with their next tick, last tick fired and counts."""
        return recurring.overview(self._queue)

    def set_next_tick(self, schedule: str, when: datetime | None = None) -> None:
        """Move a schedule's next tick (default: to the database's now), e.g. to have the next
        housekeeping fire it. Missed-tick rules apply to a time in the past."""
        recurring.set_next_tick(self._queue, schedule, when)

    def run_schedule(self, schedule: str) -> Fired | None:
        """Enqueue a schedule's message now, once, keeping its next tick."""
        return recurring.run_now(self._queue, schedule)

    # --- people and tools -------------------------------------------------------------------

    def refuse_unknown_statuses(
        self, statuses: Iterable[str | None], override: str = "new_status=True"
    ) -> None:
        """InvalidInput for a status to be written that is neither built in, nor the queue's
        default, nor held by a message of the queue (a typo such as `Pendng`), with the closest
        known status; `override` names how the caller sets a new status anyway. Every command
        and endpoint that writes a status asks this first, unless told the status is new."""
        status_guard.refuse_unknown(self._queue, statuses, override)

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
        return admin.set_status(
            self._queue,
            status,
            ids=ids,
            from_status=from_status,
            where=where,
            force=force,
            dry_run=dry_run,
        )

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
        return admin.edit(
            self._queue, message_id, body=body, status=status, priority=priority, force=force
        )

    def delete(self, message_id: int, force: bool = False) -> None:
        admin.delete(self._queue, message_id, force)

    def delete_many(self, ids: Sequence[int], force: bool = False) -> int:
        """Delete the messages with these ids, leaving Leased ones unless `force`; the number
        deleted (ids that are gone already are not an error)."""
        return admin.delete_many(self._queue, ids, force)

    def cancel_many(self, ids: Sequence[int]) -> int:
        """Cancel the unfinished messages with these ids (Leased ones too: their handler is told
        to stop); finished ones stay as they are. The number cancelled."""
        return admin.cancel_many(self._queue, ids)

    # --- reading ----------------------------------------------------------------------------

    def get(self, message_id: int) -> Message:
        read.existing_id(message_id, self.name)
        with self.storage.transaction() as connection:
            return read.get(self._queue, connection, message_id)

    def get_by_tracking_id(self, tracking_id: uuid.UUID | str) -> Message:
        with self.storage.transaction() as connection:
            return read.by_tracking_id(self._queue, connection, read.tracking_uuid(tracking_id))

    def attempts(self, message: Message) -> list[Attempt]:
        """The recorded failed and lost attempts of a message (the newest
        `ATTEMPTS_KEPT`), oldest first."""
        return history.attempts_of(self.storage, message.tracking_id)

    def messages(
        self,
        *,
        status: str | None = None,
        where: str | None = None,
        message_id: str | None = None,
        correlation_id: str | None = None,
        after_id: int | None = None,
        limit: int = 100,
        order: Literal["asc", "desc"] = "asc",
        error_contains: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
    ) -> list[Message]:
        """A page of messages in id order; pass the last id as `after_id` for the next page.
        `correlation_id` chooses those the caller gave that correlation id; `error_contains`
        those whose last error contains the text (case-insensitive; `%` and `_` are plain
        characters); the time bounds (with a time zone) those created or last changed at or
        after `*_after` and before `*_before`. Every filter given must hold."""
        return read.messages(
            self._queue,
            status=status,
            where=where,
            message_id=message_id,
            correlation_id=correlation_id,
            after_id=after_id,
            limit=limit,
            order=order,
            search=Search(
                error_contains, created_after, created_before, updated_after, updated_before
            ),
        )

    def count(self, *, status: str | None = None, where: str | None = None) -> int:
        return read.count(self._queue, status=status, where=where)

    def stats(self) -> QueueStats:
        """Counts per status, backlog and oldest due message, served by indexes.

        Counts of the statuses that drive work (Pending, Sleeping, Leased, Error, Abandoned)
        are always exact; on engines with `capabilities.estimates_counts` (PostgreSQL) a status
        with more than 100,000 rows (Processed, in a queue that keeps history) may be an
        estimate, listed in `approximate`.
        """
        return read.stats(self._queue)

    def table_exists(self) -> bool:
        """Whether the queue's table is still there (it can be dropped outside tablequeue)."""
        with self.storage.reading() as connection:
            return sa.inspect(connection).has_table(self.table.name)
