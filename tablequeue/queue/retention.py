"""Retention: what `keepProcessedFor` and `keepResultsFor` say, applied by one worker of a
queue at a time.

The guard is a lease row per queue in `tablequeue_housekeeping`: a worker purges only while it
holds an unexpired lease, and every purge batch renews it first, in the batch's own
transaction. The renewal locks the row until the batch commits, so a worker trying to take the
lease meanwhile waits, then finds it held: two batches of one queue never run at once, even
when a holder stalls past its lease (its next renewal fails and it stops).

Each batch deletes at most PURGE_BATCH rows (`admin.purge` for messages); attempts go once
neither their message nor its result is left; the queue's expired runtime subscriptions go too
(publishing has skipped them since they expired).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..limits import PURGE_BATCH
from ..storage import subscriptions
from . import admin
from .context import QueueContext

HOUSEKEEPING_LEASE_SECONDS = 60.0


@dataclass
class Purged:
    """What one retention round removed."""

    messages: int = 0
    results: int = 0
    attempts: int = 0
    subscriptions: int = 0

    @property
    def total(self) -> int:
        return self.messages + self.results + self.attempts + self.subscriptions


def take_lease(queue: QueueContext, owner: str, seconds: float) -> bool:
    """Take (or keep) the queue's housekeeping lease; False while another holds it."""
    h, d = queue.storage.history.housekeeping, queue.dialect
    with queue.storage.transaction() as connection:
        known = connection.execute(sa.select(h.c.queue).where(h.c.queue == queue.name)).first()
    if known is None:
        try:
            with queue.storage.transaction() as connection:
                connection.execute(sa.insert(h).values(queue=queue.name))
        except sa.exc.IntegrityError:
            pass  # another worker made it meanwhile
    free = sa.or_(
        h.c.owner == owner,
        h.c.owner.is_(None),
        h.c.lease_expires_at.is_(None),
        h.c.lease_expires_at < d.now(),
    )
    take = (
        sa.update(h)
        .where(h.c.queue == queue.name, free)
        .values(owner=owner, lease_expires_at=d.seconds_from_now(sa.literal(seconds)))
    )
    with queue.storage.transaction() as connection:
        return bool(connection.execute(take).rowcount)


def renew_lease(queue: QueueContext, connection: Connection, owner: str, seconds: float) -> bool:
    """In a purge batch's transaction, before it deletes: still ours? Then renew it (and hold
    the row until this transaction ends)."""
    h, d = queue.storage.history.housekeeping, queue.dialect
    renew = (
        sa.update(h)
        .where(h.c.queue == queue.name, h.c.owner == owner, h.c.lease_expires_at >= d.now())
        .values(lease_expires_at=d.seconds_from_now(sa.literal(seconds)), purged_at=d.now())
    )
    return bool(connection.execute(renew).rowcount)


def release_lease(queue: QueueContext, owner: str) -> None:
    """Give the lease up (a worker stopping), so that another worker takes over at once."""
    h = queue.storage.history.housekeeping
    with queue.storage.transaction() as connection:
        connection.execute(
            sa.update(h)
            .where(h.c.queue == queue.name, h.c.owner == owner)
            .values(owner=None, lease_expires_at=None)
        )


def holder(queue: QueueContext) -> str | None:
    """Who holds the queue's housekeeping lease now (None: nobody)."""
    h, d = queue.storage.history.housekeeping, queue.dialect
    with queue.storage.transaction() as connection:
        return connection.execute(
            sa.select(h.c.owner).where(h.c.queue == queue.name, h.c.lease_expires_at >= d.now())
        ).scalar()


def purge_retained(
    queue: QueueContext,
    owner: str,
    lease_seconds: float = HOUSEKEEPING_LEASE_SECONDS,
    batch: int = PURGE_BATCH,
) -> Purged | None:
    """One retention round if this owner holds (or takes) the lease, else None: Processed
    messages past keepProcessedFor, results past keepResultsFor, then attempts of messages
    with neither a row nor a result left. Bounded batches, each renewing the lease."""
    if not take_lease(queue, owner, lease_seconds):
        return None
    purged = Purged()

    def guard(connection: Connection) -> bool:
        return renew_lease(queue, connection, owner, lease_seconds)

    purged.messages = admin.purge(queue, None, None, guard=guard)
    keep = queue.spec.keep_results
    r, a, t, d = (
        queue.storage.history.results,
        queue.storage.history.attempts,
        queue.table,
        queue.dialect,
    )
    if keep is not None:
        old = sa.and_(
            r.c.queue == queue.name,
            r.c.processed_at < d.seconds_from_now(sa.literal(-keep.total_seconds())),
        )
        purged.results = _in_batches(queue, r.c.tracking_id, old, batch, guard)
    orphaned = sa.and_(
        a.c.queue == queue.name,
        ~sa.exists().where(t.c.tracking_id == a.c.tracking_id),
        ~sa.exists().where(r.c.tracking_id == a.c.tracking_id),
    )
    purged.attempts = _in_batches(queue, a.c.id, orphaned, batch, guard)
    purged.subscriptions = _purge_expired_subscriptions(queue, batch, guard)
    return purged


def _purge_expired_subscriptions(
    queue: QueueContext, batch: int, guard: Callable[[Connection], bool]
) -> int:
    """The queue's runtime subscriptions past their expiry (none before the table exists or
    has expiries: apply makes and migrates it)."""
    storage = queue.storage
    with storage.transaction() as connection:
        if "expires_at" not in storage.subscription_columns(connection):
            return 0
    s = storage.subscriptions
    gone = subscriptions.expired(s, queue.dialect, queue.name)
    return _in_batches(queue, s.c.topic, gone, batch, guard, scope=s.c.queue_name == queue.name)


def _in_batches(
    queue: QueueContext,
    key: sa.Column[Any],
    where: sa.ColumnElement[bool],
    batch: int,
    guard: Callable[[Connection], bool],
    scope: sa.ColumnElement[bool] | None = None,
) -> int:
    """Delete the rows `where` chooses, `batch` at a time (their keys first, then those rows:
    the same two statements on every engine), each batch in its own guarded transaction.
    `scope` completes the key where it is one column of a wider primary key."""
    table = key.table
    choose = sa.select(key).where(where).limit(batch)
    total = 0
    while True:
        with queue.storage.transaction() as connection:
            if not guard(connection):
                return total
            keys = list(connection.execute(choose).scalars())
            if keys:
                chosen = key.in_(keys) if scope is None else sa.and_(scope, key.in_(keys))
                connection.execute(sa.delete(table).where(chosen))
        total += len(keys)
        if len(keys) < batch:
            return total
