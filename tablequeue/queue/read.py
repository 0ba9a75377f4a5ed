"""Reading a queue: one message, pages of messages, counts and stats."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import health, indexes, names, predicate
from ..errors import InvalidInput, MessageNotFound
from ..health import WorkerPresence
from ..limits import MAX_ID
from ..models import Message, QueueStats, check_text
from ..sqltypes import UtcDateTime
from ..storage import workers as worker_rows
from .context import QueueContext
from .search import Search, conditions


def get(queue: QueueContext, connection: Connection, message_id: int) -> Message:
    table = queue.table
    row = connection.execute(sa.select(table).where(table.c.id == message_id)).first()
    if row is None:
        raise MessageNotFound(f"no message with id {message_id} in queue {queue.name!r}")
    return Message.from_row(row._mapping)


def by_tracking_id(queue: QueueContext, connection: Connection, tracking_id: uuid.UUID) -> Message:
    t = queue.table
    row = connection.execute(sa.select(t).where(t.c.tracking_id == tracking_id)).first()
    if row is None:
        raise MessageNotFound(f"no message with tracking id {tracking_id} in {queue.name!r}")
    return Message.from_row(row._mapping)


def messages(
    queue: QueueContext,
    *,
    status: str | None,
    where: str | None,
    message_id: str | None,
    after_id: int | None,
    limit: int,
    order: Literal["asc", "desc"],
    correlation_id: str | None = None,
    search: Search | None = None,
) -> list[Message]:
    if not 1 <= limit <= 10_000:
        raise InvalidInput(f"limit {limit} out of range 1..10000")
    t = queue.table
    condition = selection(
        queue, status=status, where=where, message_id=message_id, correlation_id=correlation_id
    )
    statement = sa.select(t)
    if condition is not None:
        statement = statement.where(condition)
    if search is not None:
        statement = statement.where(*conditions(t, search))
    if after_id is not None:
        if not 0 <= after_id <= MAX_ID:
            raise InvalidInput(f"after_id {after_id} out of range 0..{MAX_ID}")
        statement = statement.where(t.c.id > after_id if order == "asc" else t.c.id < after_id)
    statement = statement.order_by(t.c.id if order == "asc" else t.c.id.desc()).limit(limit)
    with queue.storage.transaction() as connection:
        return [Message.from_row(row._mapping) for row in connection.execute(statement)]


def count(queue: QueueContext, *, status: str | None, where: str | None) -> int:
    condition = selection(queue, status=status, where=where)
    statement = sa.select(sa.func.count()).select_from(queue.table)
    if condition is not None:
        statement = statement.where(condition)
    with queue.storage.transaction() as connection:
        return int(connection.execute(statement).scalar_one())


def selection(
    queue: QueueContext,
    *,
    ids: Sequence[int] | None = None,
    status: str | None = None,
    where: str | None = None,
    message_id: str | None = None,
    correlation_id: str | None = None,
) -> sa.ColumnElement[bool] | None:
    """Messages chosen by ids, status, messageId, the caller's correlation id and/or
    predicate; None when not chosen."""
    t = queue.table
    parts: list[sa.ColumnElement[bool]] = []
    if ids is not None:
        parts.append(by_ids(queue, ids))
    if status is not None:
        parts.append(t.c.status == names.status(status))
    if message_id is not None:
        parts.append(t.c.message_id == check_text(message_id))
    if correlation_id is not None:
        parts.append(t.c.app_correlation_id == check_text(correlation_id))
    if where is not None:
        indexed = indexes.lookup(queue.storage.engine, queue.dialect, t, queue.spec.indexes)
        parts.append(predicate.to_sql(predicate.parse(where), t.c.message, queue.dialect, indexed))
    return sa.and_(*parts) if parts else None


def by_ids(queue: QueueContext, ids: Sequence[int]) -> sa.ColumnElement[bool]:
    """The messages with these ids (a bound list), after checking that they can be ids."""
    if not ids:
        raise InvalidInput("no message ids given")
    if not all(1 <= int(i) <= MAX_ID for i in ids):
        raise InvalidInput(f"message ids are whole numbers from 1 to {MAX_ID}")
    return queue.table.c.id.in_([int(i) for i in ids])


def has_due(queue: QueueContext) -> bool:
    with queue.storage.transaction() as connection:
        return connection.execute(queue.queries.due()).first() is not None


def stats(queue: QueueContext) -> QueueStats:
    """Counts per status, backlog and oldest due message, served by indexes."""
    dialect, queries = queue.dialect, queue.queries
    exact = (names.PENDING, names.SLEEPING, names.LEASED, names.ERROR, names.ABANDONED)
    with queue.storage.transaction() as connection:
        counts, approximate = dialect.count_by_status(connection, queries, exact)
        waiting, oldest, now = dialect.backlog(connection, queries)
    oldest_seconds = 0.0
    if oldest is not None:
        engine_dialect = queue.storage.engine.dialect
        oldest = UtcDateTime().process_result_value(oldest, engine_dialect)
        now = UtcDateTime().process_result_value(now, engine_dialect)
        assert oldest is not None and now is not None
        oldest_seconds = max((now - oldest).total_seconds(), 0.0)
    state, reasons = health.evaluate(
        queue.spec.health, counts, oldest_seconds, *_workers(queue, oldest_seconds)
    )
    return QueueStats(
        queue=queue.name,
        counts=counts,
        backlog=waiting,
        leased=counts.get(names.LEASED, 0),
        oldest_pending_seconds=oldest_seconds,
        health=state,
        health_reasons=reasons,
        approximate=sorted(approximate),
    )


def _workers(queue: QueueContext, oldest_seconds: float) -> tuple[WorkerPresence | None, bool]:
    """Live and stale workers, and whether the queue expects any: read only when the health rule
    on workers could fire (due messages waited longer than `noWorkersAfterSeconds`). A queue
    expects workers when its spec declares `workers` or a worker heartbeat for it lately."""
    rules = queue.spec.health
    if not rules.enabled or oldest_seconds <= rules.no_workers_after_seconds:
        return None, False
    present = worker_rows.presence(queue.storage, queue.name)
    declared = "workers" in queue.spec.model_fields_set
    return present, declared or (present is not None and present.live + present.stale > 0)


def existing_id(message_id: int, queue: str) -> None:
    """Outside BIGINT no message can exist; the driver would fail on the number instead."""
    if not 1 <= message_id <= MAX_ID:
        raise MessageNotFound(f"no message with id {message_id} in queue {queue!r}")


def tracking_uuid(value: uuid.UUID | str) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise InvalidInput(f"invalid tracking id {str(value)[:80]!r}: expected a UUID") from None
