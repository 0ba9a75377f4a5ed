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
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import sqlalchemy as sa

from .. import names
from ..errors import InvalidInput
from ..health import WorkerPresence
from ..sqltypes import UtcDateTime
from .schema import HOST_LENGTH, WORKER_ID_LENGTH, WORKERS_TABLE

if TYPE_CHECKING:
    from .engine import Storage

DEFAULT_HEARTBEAT_SECONDS = 5.0
STALE_AFTER_BEATS = 3
MIN_STALE_SECONDS = 10.0
FORGET_AFTER_SECONDS = 3600.0
"""A worker silent this long is deleted (and never shown): the table stays bounded."""
MAX_LISTED = 1000
"""The most workers one read returns (by queue, then start time)."""

WorkerState = Literal["live", "stale"]


def stale_after(heartbeat_seconds: float) -> float:
    """Seconds without a beat after which a worker is shown as stale."""
    return max(STALE_AFTER_BEATS * heartbeat_seconds, MIN_STALE_SECONDS)


@dataclass(frozen=True)
class Heartbeat:
    """What a worker reports about itself on each beat."""

    worker_id: str
    queue: str
    host: str
    pid: int
    version: str
    heartbeat_seconds: float
    in_flight: int = 0
    processed: int = 0
    """Messages whose success was recorded since the worker started."""
    failed: int = 0
    """Messages whose failure was recorded since the worker started (retrying or Error)."""

    def checked(self) -> Heartbeat:
        if not 1 <= len(self.worker_id) <= WORKER_ID_LENGTH:
            raise InvalidInput(f"a worker id has 1 to {WORKER_ID_LENGTH} characters")
        names.queue_name(self.queue)
        if not 0 < self.heartbeat_seconds <= 3600:
            raise InvalidInput("heartbeat_seconds must be above 0 and at most 3600")
        return self


@dataclass(frozen=True)
class WorkerInfo:
    """A worker as the database last heard from it."""

    worker_id: str
    queue: str
    host: str
    pid: int
    version: str
    heartbeat_seconds: float
    started_at: datetime
    last_seen: datetime
    seconds_since_seen: float
    in_flight: int
    processed: int
    failed: int

    @property
    def up_seconds(self) -> float:
        """Seconds since the first heartbeat (database clock); a stale worker's ends at its
        last heartbeat."""
        known = (self.last_seen - self.started_at).total_seconds()
        return max(known + (self.seconds_since_seen if self.state == "live" else 0.0), 0.0)

    @property
    def stale_after_seconds(self) -> float:
        return stale_after(self.heartbeat_seconds)

    @property
    def state(self) -> WorkerState:
        return "stale" if self.seconds_since_seen > self.stale_after_seconds else "live"

    def to_json(self) -> dict[str, Any]:
        return {
            "workerId": self.worker_id,
            "queue": self.queue,
            "state": self.state,
            "host": self.host,
            "pid": self.pid,
            "version": self.version,
            "startedAt": self.started_at.isoformat(),
            "lastSeen": self.last_seen.isoformat(),
            "secondsSinceSeen": round(self.seconds_since_seen, 3),
            "heartbeatSeconds": self.heartbeat_seconds,
            "staleAfterSeconds": self.stale_after_seconds,
            "inFlight": self.in_flight,
            "processed": self.processed,
            "failed": self.failed,
        }


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
