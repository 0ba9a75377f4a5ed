"""The housekeeping lease: one row per queue in `tablequeue_housekeeping` that lets one worker at
a time purge what the queue's retention says, and the queue's rows left behind once it is
deleted.

A worker purges only while it holds an unexpired lease, and every purge batch renews it first,
in the batch's own transaction. The renewal locks the row until the batch commits, so a worker
trying to take the lease meanwhile waits, then finds it held: two batches of one queue never
run at once, even when a holder stalls past its lease (its next renewal fails and it stops).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..storage import Storage

HOUSEKEEPING_LEASE_SECONDS = 60.0


def take(storage: Storage, queue: str, owner: str, seconds: float) -> bool:
    """Take (or keep) the queue's housekeeping lease; False while another holds it."""
    h, d = storage.history.housekeeping, storage.dialect
    with storage.transaction() as connection:
        known = connection.execute(sa.select(h.c.queue).where(h.c.queue == queue)).first()
    if known is None:
        try:
            with storage.transaction() as connection:
                connection.execute(sa.insert(h).values(queue=queue))
        except sa.exc.IntegrityError:
            pass  # another worker made it meanwhile
    free = sa.or_(
        h.c.owner == owner,
        h.c.owner.is_(None),
        h.c.lease_expires_at.is_(None),
        h.c.lease_expires_at < d.now(),
    )
    take_it = (
        sa.update(h)
        .where(h.c.queue == queue, free)
        .values(owner=owner, lease_expires_at=d.seconds_from_now(sa.literal(seconds)))
    )
    with storage.transaction() as connection:
        return bool(connection.execute(take_it).rowcount)


def renew(storage: Storage, connection: Connection, queue: str, owner: str, seconds: float) -> bool:
    """In a purge batch's transaction, before it deletes: still ours? Then renew it (and hold
    the row until this transaction ends)."""
    h, d = storage.history.housekeeping, storage.dialect
    renew_it = (
        sa.update(h)
        .where(h.c.queue == queue, h.c.owner == owner, h.c.lease_expires_at >= d.now())
        .values(lease_expires_at=d.seconds_from_now(sa.literal(seconds)), purged_at=d.now())
    )
    return bool(connection.execute(renew_it).rowcount)


def release(storage: Storage, queue: str, owner: str) -> None:
    """Give the lease up (a worker stopping), so that another worker takes over at once."""
    h = storage.history.housekeeping
    with storage.transaction() as connection:
        connection.execute(
            sa.update(h)
            .where(h.c.queue == queue, h.c.owner == owner)
            .values(owner=None, lease_expires_at=None)
        )


def holder(storage: Storage, queue: str) -> str | None:
    """Who holds the queue's housekeeping lease now (None: nobody)."""
    h, d = storage.history.housekeeping, storage.dialect
    with storage.transaction() as connection:
        return connection.execute(
            sa.select(h.c.owner).where(h.c.queue == queue, h.c.lease_expires_at >= d.now())
        ).scalar()
