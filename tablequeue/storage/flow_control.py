"""Pausing a queue and limiting its leases: the registry's `paused_at` and `max_leased` (the
global concurrency), and the shared table `tablequeue_rate_limits` (one token bucket per
rate-limited queue, at most one row per queue in the registry).

The bucket is kept as GCRA's theoretical arrival time: `theoretical_arrival` (seconds since the
epoch, database clock) is when the bucket would be empty if nothing had been leased since. At a
time `now` there are `min(burst, (now - theoretical_arrival) * rate)` tokens; leasing `k`
messages moves it to `max(theoretical_arrival, now - burst / rate) + k / rate`. A new bucket
starts full (0).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..errors import QueueNotFound
from ..models import FlowState
from . import audit

if TYPE_CHECKING:
    from ..spec import RateLimit
    from .engine import Storage


def flow_state(storage: Storage, connection: Connection, name: str) -> FlowState | None:
    """The pause and rate limit of a queue, or None when it does not exist (one statement)."""
    g, r = storage.registry, storage.rate_limits
    row = connection.execute(
        sa.select(*_state_columns(storage))
        .select_from(g.outerjoin(r, r.c.queue == g.c.name))
        .where(g.c.name == name)
    ).first()
    if row is None:
        return None
    return _state(row)


def flow_states(storage: Storage) -> dict[str, FlowState]:
    g, r = storage.registry, storage.rate_limits
    with storage.transaction() as connection:
        if not sa.inspect(connection).has_table(g.name):
            return {}
        rows = connection.execute(
            sa.select(g.c.name, *_state_columns(storage)).select_from(
                g.outerjoin(r, r.c.queue == g.c.name)
            )
        )
        return {row.name: _state(row) for row in rows}


def _state_columns(storage: Storage) -> list[sa.ColumnElement[Any]]:
    g, r = storage.registry, storage.rate_limits
    return [g.c.paused_at, r.c.messages_per_second, r.c.burst, g.c.max_leased, g.c.group_limit]


def _state(row: Any) -> FlowState:
    return FlowState(
        row.paused_at, row.messages_per_second, row.burst, row.max_leased, row.group_limit
    )


def flow_state_of(storage: Storage, name: str) -> FlowState:
    with storage.transaction() as connection:
        state = flow_state(storage, connection, name)
    if state is None:
        raise QueueNotFound(f"queue {name!r} does not exist", storage.shown_url)
    return state


def set_paused(storage: Storage, name: str, paused: bool) -> FlowState:
    """Pause (keeping the time of a pause already in force) or resume a queue at runtime."""
    registry = storage.registry
    paused_at: Any = sa.func.coalesce(registry.c.paused_at, storage.dialect.now())
    with storage.transaction() as connection:
        if not sa.inspect(connection).has_table(registry.name):
            raise QueueNotFound(f"queue {name!r} does not exist", storage.shown_url)
        # Existence is read, not taken from the row count (MariaDB's ODBC driver counts only
        # rows that changed: a second pause would look like a missing queue).
        connection.execute(
            registry.update()
            .where(registry.c.name == name)
            .values(paused_at=paused_at if paused else None)
        )
        state = flow_state(storage, connection, name)
        if state is not None:
            audit.record(storage, connection, "pause" if paused else "resume", name)
    if state is None:
        raise QueueNotFound(f"queue {name!r} does not exist", storage.shown_url)
    return state


def declared_pause(storage: Storage, paused: bool) -> Any:
    """The `paused_at` a declared `spec.paused` sets (database clock)."""
    return storage.dialect.now() if paused else None


def sync_rate_limit(
    storage: Storage, connection: Connection, name: str, limit: RateLimit | None, now: datetime
) -> None:
    """Make the queue's bucket follow its declared rate limit (in apply's transaction, under
    its DDL lock): created full, re-sized keeping its state, or removed."""
    table = storage.rate_limits
    mine = table.c.queue == name
    if limit is None:
        connection.execute(table.delete().where(mine))
        return
    values = {
        "messages_per_second": limit.messages_per_second,
        "burst": limit.bucket_size,
        "updated_at": now,
    }
    if connection.execute(sa.select(table.c.queue).where(mine)).first() is None:
        connection.execute(table.insert().values(queue=name, theoretical_arrival=0.0, **values))
    else:
        connection.execute(table.update().where(mine).values(**values))


def forget_rate_limit(storage: Storage, connection: Connection, name: str) -> None:
    table = storage.rate_limits
    connection.execute(table.delete().where(table.c.queue == name))
