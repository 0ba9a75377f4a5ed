"""Enqueueing: a batch in one transaction, one statement per round of distinct identities."""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import actor, trace_context
from ..dialects import EnqueueBatch
from ..errors import InvalidInput
from ..limits import MAX_GROUP_KEY_LENGTH
from ..models import Enqueued, NewMessage, check_one_line
from ..spec import Dedupe, GroupsSpec
from ..storage import audit, readable_json, registry
from ..storage.borrowed import bare
from . import tracking
from .context import QueueContext
from .dedupe import report_left


def enqueue_many(
    queue: QueueContext,
    messages: Sequence[NewMessage],
    connection: Any = None,
    dedupe: Dedupe | None = None,
) -> list[Enqueued]:
    """Enqueue a batch in one transaction: one INSERT per round (an upsert with identities).

    A messageId that appears several times in one batch is applied in order, as if the
    messages had been enqueued one after the other. With `connection` (the caller's SQLAlchemy
    Connection or DB-API connection), in the caller's transaction: committed or rolled back
    with it, never by tablequeue. `dedupe`: the call's rule (`dedupe.rule`), else the queue's.
    """
    if not messages:
        return []
    storage = queue.storage
    wanted = tracking.chosen(messages)
    dedupe = dedupe or queue.spec.dedupe
    try:
        if connection is None:
            rounds = _rounds_of_unique_ids(messages)
            one_statement = len(rounds) == 1 and not wanted and actor.current() is None
            if one_statement and storage.statements_in_autocommit:  # (no audit entry to write)
                return _enqueue_autocommit(queue, messages, rounds[0], dedupe)
            with storage.transaction() as own:
                return enqueue_in(queue, own, messages, rounds, dedupe)
        with storage.borrowed(connection) as theirs:
            return enqueue_in(queue, theirs, messages, dedupe=dedupe)
    except (sa.exc.IntegrityError, sa.exc.ProgrammingError, sa.exc.OperationalError):
        with storage.reading() as reader:  # outside the caller's transaction, if any
            registry.default_status(storage, reader, queue.name)  # QueueNotFound if deleted
            # A concurrent enqueue took a chosen tracking id after the check: name it.
            tracking.refuse_taken(queue, reader, wanted)
        raise


def enqueue_in(
    queue: QueueContext,
    connection: Connection,
    messages: Sequence[NewMessage],
    rounds: list[list[int]] | None = None,
    dedupe: Dedupe | None = None,
) -> list[Enqueued]:
    """Enqueue a batch with statements on `connection`, in whatever transaction it is in (the
    caller's, a publish's, or the claim of a schedule's tick); `dedupe` else the queue's."""
    dedupe = dedupe or queue.spec.dedupe
    tracking.refuse_taken(queue, connection, tracking.chosen(messages))
    if queue.spec.idempotent:  # a row not yet rewritten by apply holds the same body escaped
        readable_json.adopt_same_bodies(connection, queue.dialect, queue.queries, messages)
    now = datetime.now(UTC)
    trace_headers = trace_context.current_headers()  # the caller's span, if any
    results: list[Enqueued | None] = [None] * len(messages)
    for round_indexes in rounds or _rounds_of_unique_ids(messages):
        rows = _round_rows(queue, messages, round_indexes, now, trace_headers)
        upserts, idempotent = _upserts(messages, round_indexes), queue.spec.idempotent
        batch = EnqueueBatch(
            queue.name, rows, upserts, idempotent, dedupe.mode, dedupe.window_seconds
        )
        returned = queue.dialect.enqueue_round(connection, queue.queries, batch)
        _round_results(messages, round_indexes, rows, returned, results)
        report_left(queue, connection, dedupe, messages, round_indexes, results)
    enqueued = [result for result in results if result is not None]
    _record_replaced(queue, connection, enqueued)
    return enqueued


def _record_replaced(queue: QueueContext, connection: Connection, done: list[Enqueued]) -> None:
    """Messages whose body a new version replaced (a messageId enqueued again, whatever its
    status was), in the audit trail when a person or tool acts (`actor`)."""
    if actor.current() is None:  # nothing to record: no list built on every enqueue
        return
    replaced = [result.message_id for result in done if result.outcome == "updated"]
    if replaced:
        target = {"message_ids": replaced}
        audit.record(queue.storage, connection, "replace", queue.name, target, len(replaced))


def _enqueue_autocommit(
    queue: QueueContext, messages: Sequence[NewMessage], round_indexes: list[int], dedupe: Dedupe
) -> list[Enqueued]:
    """Messages with distinct identities in one statement that is its own transaction (engines
    with `capabilities.enqueues_in_autocommit`): one round trip, no BEGIN or COMMIT; rows a
    dedupe mode kept are read by one more statement (`dedupe.report_left`)."""
    now, trace_headers = datetime.now(UTC), trace_context.current_headers()
    rows = _round_rows(queue, messages, round_indexes, now, trace_headers)
    results: list[Enqueued | None] = [None] * len(messages)
    with queue.storage.autocommit() as dbapi_connection:
        upserts, idempotent = _upserts(messages, round_indexes), queue.spec.idempotent
        batch = EnqueueBatch(
            queue.name, rows, upserts, idempotent, dedupe.mode, dedupe.window_seconds
        )
        returned = queue.dialect.enqueue_autocommit(dbapi_connection, queue.queries, batch)
        _round_results(messages, round_indexes, rows, returned, results)
        if dedupe.mode != "replace" and len(returned) < len(rows):  # one more statement
            reader = bare(queue.storage.engine, dbapi_connection)
            report_left(queue, reader, dedupe, messages, round_indexes, results)
    return [result for result in results if result is not None]


def _upserts(messages: Sequence[NewMessage], round_indexes: list[int]) -> bool:
    return any(messages[i].message_id for i in round_indexes)  # else no conflict possible


def _round_rows(
    queue: QueueContext,
    messages: Sequence[NewMessage],
    round_indexes: list[int],
    now: datetime,
    trace_headers: dict[str, str] | None,
) -> list[dict[str, Any]]:
    """The per-row parameters of one statement for messages with distinct identities."""
    # Upsert identities in one order everywhere so concurrent batches cannot deadlock.
    round_indexes.sort(key=lambda i: messages[i].message_id or "")
    tracking_ids = _random_uuids(len(round_indexes))
    default_expiry = queue.spec.default_expiry_seconds
    return [
        _row(messages[i], now, messages[i].tracking_id or tracking_id, trace_headers)
        | _expiry(messages[i], now, default_expiry)
        | {"b_group_key": group_key(queue.spec.groups, messages[i])}
        for i, tracking_id in zip(round_indexes, tracking_ids, strict=True)
    ]


def _round_results(
    messages: Sequence[NewMessage],
    round_indexes: list[int],
    rows: list[dict[str, Any]],
    returned: Sequence[Any],
    results: list[Enqueued | None],
) -> None:
    """What became of each message of one statement (a discarded one returned no row)."""
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


def _row(
    new: NewMessage,
    now: datetime,
    tracking_id: uuid.UUID,
    trace_headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A new message's per-row parameters; its status None means the queue's default status,
    read by the statement itself (it may change at runtime). The caller's trace context joins
    headers that have no `traceparent`."""
    return {
        "b_message_id": new.message_id,
        "b_status": new.status,
        "b_scheduled": (new.at is not None and new.at > now) or (new.after or 0) > 0,
        "b_priority": new.priority,
        "b_message": new.message,
        "b_headers": trace_context.with_context(new.headers, trace_headers),
        "b_at": new.at,
        "b_after": new.after or 0.0,
        "b_tracking_id": tracking_id,
        "b_correlation_id": new.correlation_id,
        "b_label": new.label,
    }


def _expiry(new: NewMessage, now: datetime, default_seconds: float | None) -> dict[str, Any]:
    """The message's own expiry, else the queue's `expireAfter` counted from when the message
    is due: a message scheduled for later does not expire before it could run."""
    if new.expires_at is not None or new.expires_after is not None or default_seconds is None:
        return {"b_expires_at": new.expires_at, "b_expires_after": new.expires_after}
    if new.at is not None and new.at > now:
        expires_at = new.at + timedelta(seconds=default_seconds)
        return {"b_expires_at": expires_at, "b_expires_after": None}
    return {"b_expires_at": None, "b_expires_after": (new.after or 0.0) + default_seconds}


def group_key(groups: GroupsSpec | None, new: NewMessage) -> str | None:
    """The message's own group key, else the one at the spec's `keyPath` in its body (refused,
    naming the path, when it is no group key)."""
    if new.group_key is not None or groups is None:
        return new.group_key
    key = groups.key_of(new.message)
    if key is None:
        return None
    field = f"group key at body path {groups.key_path}"
    if len(key) > MAX_GROUP_KEY_LENGTH or not key:
        raise InvalidInput(f"{field}: {len(key)} characters; 1 to {MAX_GROUP_KEY_LENGTH} allowed")
    try:
        return check_one_line(key)
    except InvalidInput as error:
        raise InvalidInput(f"{field}: {error}") from None


def _random_uuids(count: int) -> list[uuid.UUID]:
    """Version-4 UUIDs, as uuid4() makes them, from one read of the system's random source."""
    data = os.urandom(16 * count)
    return [uuid.UUID(bytes=data[i : i + 16], version=4) for i in range(0, 16 * count, 16)]


def _enqueued(new: NewMessage, row: Any) -> Enqueued:
    if row is None:
        return Enqueued(None, None, new.message_id, "discarded", None, None)
    outcome: Literal["inserted", "updated"] = "inserted" if row.version == 1 else "updated"
    return Enqueued(row.id, row.tracking_id, row.message_id, outcome, row.status, row.version)
