"""What people and tools do to a queue's messages: set status, edit, delete, cancel, report
progress; and housekeeping: sweep lapsed leases and expired messages, purge."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import names
from ..dialects.statuses import literal_status
from ..durations import format_duration
from ..errors import Conflict, InvalidInput, MessageNotFound
from ..limits import MAX_PRIORITY, PURGE_BATCH
from ..models import Message, Swept, check_json
from ..storage import audit
from . import history, read
from .context import QueueContext


def set_status(
    queue: QueueContext,
    status: str,
    *,
    ids: Sequence[int] | None,
    from_status: str | None,
    where: str | None,
    force: bool,
    dry_run: bool,
) -> int:
    names.settable_status(status)
    t, d = queue.table, queue.dialect
    chosen = read.selection(queue, ids=ids, status=from_status, where=where)
    if chosen is None:
        raise InvalidInput("choose messages by id, by current status or by predicate")
    condition = sa.and_(chosen, t.c.status != status)
    if not force:
        condition = sa.and_(condition, t.c.status != literal_status(names.LEASED))
    if dry_run:
        with queue.storage.transaction() as connection:
            count = connection.execute(sa.select(sa.func.count()).where(condition))
            return int(count.scalar_one())
    values: dict[str, Any] = {"status": status, "updated_at": d.now()}
    if force:
        values["lease_expires_at"] = None
    if status == names.PENDING:
        values.update(_fresh_start(queue))
    with queue.storage.transaction() as connection:
        changed = int(connection.execute(sa.update(t).where(condition).values(**values)).rowcount)
        if changed and status == names.PENDING:
            d.notify(connection, t.name)
        chosen_by = {"ids": ids, "fromStatus": from_status, "where": where, "force": force or None}
        _record(queue, connection, "set-status", {"status": status} | chosen_by, changed)
        return changed


def edit(
    queue: QueueContext,
    message_id: int,
    *,
    body: Any,
    status: str | None,
    priority: int | None,
    force: bool,
) -> Message:
    read.existing_id(message_id, queue.name)
    t, d = queue.table, queue.dialect
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
            values.update(_fresh_start(queue))
        if force:
            values["lease_expires_at"] = None
    condition: sa.ColumnElement[bool] = t.c.id == message_id
    if not force:
        condition = sa.and_(condition, t.c.status != literal_status(names.LEASED))
    with queue.storage.transaction() as connection:
        row = d.update_one(connection, t, condition, values)
        if row is None:
            current = read.get(queue, connection, message_id)
            raise Conflict(
                f"message {message_id} is {current.status}: it is being processed; "
                "use force to change it anyway"
            )
        changes = {"body": body is not None or None, "status": status, "priority": priority}
        _record(queue, connection, "edit", {"ids": [message_id]} | changes, 1)
    return Message.from_row(row._mapping)


def _fresh_start(queue: QueueContext) -> dict[str, Any]:
    """A person retrying a message: due now, no attempts counted, no expiry already past."""
    t, d = queue.table, queue.dialect
    now = d.now()
    return {
        "attempts": 0,
        "process_after": now,
        "expires_at": sa.case((t.c.expires_at <= now, None), else_=t.c.expires_at),
    }


def delete(queue: QueueContext, message_id: int, force: bool) -> None:
    read.existing_id(message_id, queue.name)
    t = queue.table
    condition: sa.ColumnElement[bool] = t.c.id == message_id
    if not force:
        condition = sa.and_(condition, t.c.status != literal_status(names.LEASED))
    with queue.storage.transaction() as connection:
        if not connection.execute(sa.delete(t).where(condition)).rowcount:
            current = read.get(queue, connection, message_id)
            raise Conflict(
                f"message {message_id} is {current.status}: it is being processed; "
                "use force to delete it anyway"
            )
        _record(queue, connection, "delete", {"ids": [message_id], "force": force or None}, 1)


def delete_many(queue: QueueContext, ids: Sequence[int], force: bool) -> int:
    """Delete the messages with these ids (Leased ones only with `force`); how many went."""
    t = queue.table
    condition = read.by_ids(queue, ids)
    if not force:
        condition = sa.and_(condition, t.c.status != literal_status(names.LEASED))
    with queue.storage.transaction() as connection:
        deleted = int(connection.execute(sa.delete(t).where(condition)).rowcount)
        _record(queue, connection, "delete", {"ids": list(ids), "force": force or None}, deleted)
        return deleted


def cancel_many(queue: QueueContext, ids: Sequence[int]) -> int:
    """Cancel the unfinished messages with these ids, as `cancel` does one (a running handler
    learns it at its next lease extension); finished ones are left alone. How many changed."""
    t, d = queue.table, queue.dialect
    condition = sa.and_(
        read.by_ids(queue, ids),
        t.c.status.not_in([literal_status(s) for s in names.FINAL]),
    )
    values = {
        "status": literal_status(names.CANCELLED),
        "lease_expires_at": None,
        "updated_at": d.now(),
    }
    with queue.storage.transaction() as connection:
        cancelled = int(connection.execute(sa.update(t).where(condition).values(**values)).rowcount)
        _record(queue, connection, "cancel", {"ids": list(ids)}, cancelled)
        return cancelled


def report_progress(
    queue: QueueContext,
    message_id: int,
    progress: Any,
    owner: str | None = None,
    correlation_id: str | None = None,
) -> None:
    """Store progress; with `owner` (and the lease batch's `correlation_id`) only while that
    lease holds the message, else Conflict: a handler whose lease was lost changes nothing."""
    check_json(progress)
    t = queue.table
    condition: sa.ColumnElement[bool] = t.c.id == message_id
    if owner is not None:
        condition = sa.and_(
            condition,
            t.c.status == literal_status(names.LEASED),
            t.c.lease_owner == owner,
            t.c.correlation_id == correlation_id,
        )
    statement = (
        sa.update(t)
        .where(condition)
        .values(progress=sa.bindparam("b_progress", progress, type_=t.c.progress.type))
    )
    with queue.storage.transaction() as connection:
        if connection.execute(statement).rowcount:
            return
        if owner is None:
            raise MessageNotFound(f"no message with id {message_id} in queue {queue.name!r}")
        raise Conflict(
            f"message {message_id} of queue {queue.name!r} is no longer leased by {owner!r} "
            "(cancelled, lease expired, or finished)"
        )


def cancel(queue: QueueContext, tracking_id: uuid.UUID | str) -> Message:
    tracking = read.tracking_uuid(tracking_id)
    t, d = queue.table, queue.dialect
    unfinished = sa.and_(
        t.c.tracking_id == tracking,
        t.c.status.not_in([literal_status(s) for s in names.FINAL]),
    )
    values = {"status": literal_status(names.CANCELLED), "lease_expires_at": None}
    with queue.storage.transaction() as connection:
        row = d.update_one(connection, t, unfinished, values | {"updated_at": d.now()})
        if row is None:
            current = read.by_tracking_id(queue, connection, tracking)
            raise Conflict(
                f"message with tracking id {tracking} is already {current.status}; "
                "only unfinished messages can be cancelled"
            )
        _record(queue, connection, "cancel", {"trackingId": str(tracking)}, 1)
    return Message.from_row(row._mapping)


def sweep(queue: QueueContext) -> Swept:
    with queue.storage.transaction() as connection:
        swept, expired = queue.dialect.sweep(
            connection,
            queue.queries,
            on_lease_expired=queue.spec.on_lease_expired,
            max_attempts=queue.spec.max_attempts,
        )
        lost = [
            (lease, history.LEASE_EXPIRED, lease.lease_owner, f"lease expired; now {lease.status}")
            for lease in swept
        ]
        history.write_attempts(queue, connection, lost)
    outcomes = Counter(lease.status for lease in swept)
    return Swept(
        abandoned=outcomes[names.ABANDONED],
        retried=outcomes[names.PENDING],
        errored=outcomes[names.ERROR],
        expired=expired,
    )


def purge(
    queue: QueueContext,
    statuses: Sequence[str] | None,
    older_than: timedelta | None,
    guard: Callable[[Connection], bool] | None = None,
) -> int:
    """Delete finished messages in batches of PURGE_BATCH, one transaction each; `guard` runs
    first in each batch's transaction and stops the purge when it says False (the
    housekeeping lease, see `retention`)."""
    if statuses is None:
        statuses = [names.PROCESSED]
        older_than = older_than if older_than is not None else queue.spec.keep_processed
        if older_than is None:
            return 0
    for status in statuses:
        names.status(status)
        if status == names.LEASED:
            raise InvalidInput("leased messages cannot be purged; they are being processed")
    t, d = queue.table, queue.dialect
    condition: sa.ColumnElement[bool] = t.c.status.in_(list(statuses))
    if older_than is not None:
        age = sa.func.coalesce(t.c.processed_at, t.c.updated_at)
        condition = sa.and_(
            condition, age < d.seconds_from_now(sa.literal(-older_than.total_seconds()))
        )
    total = queue.storage.delete_in_batches(t, condition, PURGE_BATCH, guard)
    older = None if older_than is None else format_duration(older_than)
    target = {"statuses": list(statuses), "olderThan": older}
    audit.record_in_autocommit(queue.storage, "purge", queue.name, target, total)
    return total


def _record(
    queue: QueueContext,
    connection: Connection,
    action: str,
    target: dict[str, Any],
    rows: int,
) -> None:
    """The change in the audit trail, in the change's transaction, when a person or tool made
    it (`tablequeue.actor`)."""
    audit.record(queue.storage, connection, action, queue.name, target, rows)
