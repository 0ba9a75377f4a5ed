"""Retention: what a queue's `keep*For` durations say (Processed, Error, Abandoned, Cancelled and
Expired rows, and results), and what a deleted queue left behind in the shared tables, applied
by one worker at a time under the housekeeping lease (`housekeeping_lease`).

Each batch deletes at most PURGE_BATCH rows (`admin.purge` for messages) in its own
transaction; attempts go once neither their message nor its result is left. A deleted queue
keeps its housekeeping row (`registry.delete_queue` makes one if there was none): while the
queue is not registered again, any queue's housekeeper takes that row's lease and deletes the
queue's results and attempts, then the row. The queue's expired runtime subscriptions go too
(publishing has skipped them since they expired).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import names
from ..limits import PURGE_BATCH
from ..storage import Storage, subscriptions
from . import admin
from . import housekeeping_lease as lease
from .context import QueueContext

KEPT_FOR_A_WHILE = (names.ERROR, names.ABANDONED, names.CANCELLED, names.EXPIRED)
"""Final statuses with their own `keep<Status>For` (Processed has `keepProcessedFor`)."""


@dataclass
class Purged:
    """What one retention round removed."""

    messages: int = 0
    results: int = 0
    attempts: int = 0
    leftovers: int = 0
    """Results and attempts of deleted queues."""
    subscriptions: int = 0
    """Runtime subscriptions past their expiry."""

    @property
    def total(self) -> int:
        return self.messages + self.results + self.attempts + self.leftovers + self.subscriptions


def purge_retained(
    queue: QueueContext,
    owner: str,
    lease_seconds: float = lease.HOUSEKEEPING_LEASE_SECONDS,
    batch: int = PURGE_BATCH,
) -> Purged | None:
    """One retention round if this owner holds (or takes) the queue's lease, else None:
    messages of each final status past their keep duration, results past keepResultsFor,
    attempts of messages with neither a row nor a result left, then deleted queues' rows."""
    storage = queue.storage
    if not lease.take(storage, queue.name, owner, lease_seconds):
        return None
    purged = Purged()

    def guard(connection: Connection) -> bool:
        return lease.renew(storage, connection, queue.name, owner, lease_seconds)

    purged.messages = admin.purge(queue, None, None, guard=guard)
    for status in KEPT_FOR_A_WHILE:
        keep = queue.spec.keep_final(status)
        if keep is not None:
            purged.messages += admin.purge(queue, [status], keep, guard=guard)
    keep_results = queue.spec.keep_results
    r, a, t, d = storage.history.results, storage.history.attempts, queue.table, queue.dialect
    if keep_results is not None:
        old = sa.and_(
            r.c.queue == queue.name,
            r.c.processed_at < d.seconds_from_now(sa.literal(-keep_results.total_seconds())),
        )
        purged.results = _in_batches(storage, r.c.tracking_id, old, batch, guard)
    orphaned = sa.and_(
        a.c.queue == queue.name,
        ~sa.exists().where(t.c.tracking_id == a.c.tracking_id),
        ~sa.exists().where(r.c.tracking_id == a.c.tracking_id),
    )
    purged.attempts = _in_batches(storage, a.c.id, orphaned, batch, guard)
    purged.subscriptions = _purge_expired_subscriptions(queue, batch, guard)
    purged.leftovers = purge_deleted_queues(storage, owner, lease_seconds, batch)
    return purged


def _purge_expired_subscriptions(
    queue: QueueContext, batch: int, guard: Callable[[Connection], bool]
) -> int:
    """The queue's runtime subscriptions past their expiry (none when the queue allows none,
    so that its workers need no rights on the table; none before the table exists or has
    expiries: apply makes and migrates it)."""
    if not queue.spec.allows_runtime_subscriptions:
        return 0
    storage = queue.storage
    with storage.transaction() as connection:
        if "expires_at" not in storage.subscription_columns(connection):
            return 0
    s = storage.subscriptions
    gone = subscriptions.expired(s, queue.dialect, queue.name)
    return _in_batches(storage, s.c.topic, gone, batch, guard)


def purge_deleted_queues(storage: Storage, owner: str, lease_seconds: float, batch: int) -> int:
    """Delete the results and attempts of queues that are gone from the registry (each under
    its own housekeeping lease), then their housekeeping rows; the number of rows deleted."""
    h, r, a = storage.history.housekeeping, storage.history.results, storage.history.attempts
    registry = storage.registry
    with storage.transaction() as connection:
        gone = list(
            connection.execute(
                sa.select(h.c.queue).where(~sa.exists().where(registry.c.name == h.c.queue))
            ).scalars()
        )
    total = 0
    for name in gone:
        if not lease.take(storage, name, owner, lease_seconds):
            continue

        def guard(connection: Connection, name: str = name) -> bool:
            return lease.renew(storage, connection, name, owner, lease_seconds)

        unregistered = ~sa.exists().where(registry.c.name == name)  # not applied again
        for key, queue_column in ((r.c.tracking_id, r.c.queue), (a.c.id, a.c.queue)):
            where = sa.and_(queue_column == name, unregistered)
            total += _in_batches(storage, key, where, batch, guard)
        with storage.transaction() as connection:
            if guard(connection):
                connection.execute(sa.delete(h).where(h.c.queue == name, unregistered))
    return total


def _in_batches(
    storage: Storage,
    key: sa.Column[Any],
    where: sa.ColumnElement[bool],
    batch: int,
    guard: Callable[[Connection], bool],
) -> int:
    """Delete the rows `where` chooses, `batch` at a time (their keys first, then those rows:
    the same two statements on every engine), each batch in its own guarded transaction. The
    delete checks `where` again: a row that stopped matching meanwhile stays."""
    table = key.table
    choose = sa.select(key).where(where).limit(batch)
    total = 0
    while True:
        with storage.transaction() as connection:
            if not guard(connection):
                return total
            keys = list(connection.execute(choose).scalars())
            if keys:
                connection.execute(sa.delete(table).where(key.in_(keys), where))
        total += len(keys)
        if len(keys) < batch:
            return total
