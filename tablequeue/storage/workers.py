"""Live workers: one row per running worker process in `tablequeue_workers`.

A worker upserts its row every `heartbeat_seconds` (one statement, the dialect's upsert; the
times are the database's clock) and deletes it when it stops cleanly. A worker that died without
a word (kill -9, a lost node) stops beating: its row is *stale* once its last beat is older than
`stale_after(heartbeat_seconds)` (3 beats, at least 10 s), and is deleted by any live worker's
heartbeat once older than FORGET_AFTER_SECONDS (an hour); readers never show rows past that
horizon. So the table holds at most the workers of the last hour: it stays small and bounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from .. import names
from ..errors import InvalidInput
from ..health import WorkerPresence
from ..limits import HOST_LENGTH
from ..models import Heartbeat, WorkerInfo
from ..sqltypes import UtcDateTime
from .schema import WORKERS_TABLE

if TYPE_CHECKING:
    from .engine import Storage

FORGET_AFTER_SECONDS = 3600.0
"""A worker silent this long is deleted (and never shown): the table stays bounded."""
MAX_LISTED = 1000
"""The most workers one read returns (by queue, then start time)."""


def presence_of(workers: Sequence[WorkerInfo]) -> WorkerPresence:
    live = sum(1 for w in workers if w.state == "live")
    return WorkerPresence(live, len(workers) - live)


def heartbeat_statement(storage: Storage, heartbeat: Heartbeat) -> sa.Executable:
    """The upsert of one heartbeat: the worker's row, inserted or brought up to date."""
    heartbeat.checked()
    table, dialect = storage.workers_table, storage.dialect
    values: dict[str, Any] = {
        "worker_id": heartbeat.worker_id,
        "queue": heartbeat.queue,
        "host": heartbeat.host[:HOST_LENGTH],
        "pid": heartbeat.pid,
        "version": heartbeat.version[:64],
        "heartbeat_seconds": heartbeat.heartbeat_seconds,
        "started_at": dialect.now(),
        "last_seen": dialect.now(),
        "in_flight": heartbeat.in_flight,
        "processed": heartbeat.processed,
        "failed": heartbeat.failed,
    }
    update = [name for name in values if name not in ("worker_id", "started_at")]
    return dialect.upsert(table, ["worker_id"], values, update)


def beat(storage: Storage, heartbeat: Heartbeat) -> None:
    """Record a heartbeat: insert the worker's row, or update it (one statement)."""
    statement = heartbeat_statement(storage, heartbeat)
    with storage.transaction() as connection:
        connection.execute(statement)


def forget(storage: Storage, worker_id: str) -> bool:
    """Delete a worker's row (its clean shutdown); whether there was one."""
    table = storage.workers_table
    with storage.transaction() as connection:
        deleted = connection.execute(sa.delete(table).where(table.c.worker_id == worker_id))
        return bool(deleted.rowcount)


def prune(storage: Storage, older_than: float = FORGET_AFTER_SECONDS) -> int:
    """Delete the rows of workers silent for more than `older_than` seconds; how many."""
    table = storage.workers_table
    horizon = storage.dialect.seconds_from_now(sa.literal(-float(older_than)))
    with storage.transaction() as connection:
        return int(connection.execute(sa.delete(table).where(table.c.last_seen < horizon)).rowcount)


def ensure_table(storage: Storage, connection: sa.Connection) -> None:
    """Create the table if it is missing (with the registry, under its DDL lock)."""
    storage.workers_table.create(connection, checkfirst=True)


def listed(storage: Storage, queue: str | None = None, limit: int = MAX_LISTED) -> list[WorkerInfo]:
    """Workers heard from within FORGET_AFTER_SECONDS, of one queue or all, by queue then start
    time; [] when no tablequeue has made the table yet. At most `limit` rows."""
    if not 1 <= limit <= MAX_LISTED:
        raise InvalidInput(f"limit {limit} out of range 1..{MAX_LISTED}")
    if queue is not None:
        names.queue_name(queue)
    table, dialect = storage.workers_table, storage.dialect
    horizon = dialect.seconds_from_now(sa.literal(-FORGET_AFTER_SECONDS))
    statement = sa.select(table, dialect.now().label("db_now")).where(table.c.last_seen >= horizon)
    if queue is not None:
        statement = statement.where(table.c.queue == queue)
    statement = statement.order_by(table.c.queue, table.c.started_at, table.c.worker_id)

    def read() -> list[Any]:
        with storage.transaction() as connection:
            return list(connection.execute(statement.limit(limit)).all())

    try:
        rows = read()
    except sa.exc.DBAPIError:
        with storage.transaction() as connection:
            if not sa.inspect(connection).has_table(WORKERS_TABLE):
                return []
        rows = read()  # made meanwhile; else the error again (e.g. no right to read it)
    return [_info(storage, row._mapping) for row in rows]


def presence(storage: Storage, queue: str) -> WorkerPresence | None:
    """Live and stale workers of a queue; None when they cannot be read (no table yet, or no
    right to read it): the health rule on workers is then skipped."""
    try:
        return presence_of(listed(storage, queue))
    except sa.exc.DBAPIError as error:
        if error.connection_invalidated:
            raise
        return None


def _info(storage: Storage, row: Any) -> WorkerInfo:
    dialect = storage.engine.dialect
    now = UtcDateTime().process_result_value(row["db_now"], dialect)
    last_seen = row["last_seen"]
    assert now is not None and last_seen is not None
    return WorkerInfo(
        worker_id=row["worker_id"],
        queue=row["queue"],
        host=row["host"],
        pid=int(row["pid"]),
        version=row["version"],
        heartbeat_seconds=float(row["heartbeat_seconds"]),
        started_at=row["started_at"],
        last_seen=last_seen,
        seconds_since_seen=max((now - last_seen).total_seconds(), 0.0),
        in_flight=int(row["in_flight"]),
        processed=int(row["processed"]),
        failed=int(row["failed"]),
    )
