"""Messages: enqueue, list (keyset pages with a cursor), find across queues, read, fix, delete,
set status in bulk; delete and cancel chosen ones."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import Response

from tablequeue import errors, trace_context
from tablequeue.durations import point_in_time
from tablequeue.limits import (
    MAX_CORRELATION_ID_LENGTH,
    MAX_ERROR_SEARCH_LENGTH,
    MAX_ID,
    MAX_MESSAGE_ID_LENGTH,
)
from tablequeue.names import DedupeMode
from tablequeue.predicate import MAX_LENGTH as MAX_PREDICATE_LENGTH

from ..dependencies import (
    ADMIN,
    READER,
    DatabaseNameArg,
    DatabasesArg,
    MessageIdArg,
    QueueArg,
)
from ..limits import MAX_BATCH, MAX_PAGE
from ..schemas import (
    NEW_STATUS_FIELD_HINT,
    AttemptList,
    AttemptOut,
    CancelledResponse,
    DeletedResponse,
    EnqueueBody,
    EnqueueResponse,
    EnqueueResult,
    FoundMessage,
    FoundMessages,
    MessageOut,
    MessagePage,
    MessagePatch,
    SelectedMessages,
    SetStatusRequest,
    SetStatusResponse,
    UnreachableDatabase,
)

router = APIRouter(tags=["messages"])
NEW_STATUS_QUERY = (
    "The messages' `status` is new on purpose: write it though it is neither a built-in status, "
    "nor the queue's default, nor held by a message of the queue"
)
ONE = "/queues/{name}/messages/{message_id}"
DEDUPE_QUERY = (
    "What a messageId that exists gets, for this request instead of the queue's spec.dedupe: "
    "replace (a new version), keep (left as it is), window (left as it is within the window)"
)
DEDUPE_WINDOW_QUERY = "With dedupe=window: this request's window (e.g. 10m); default the queue's"


def encode_cursor(order: str, last_id: int) -> str:
    return base64.urlsafe_b64encode(f"v1:{order}:{last_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[Literal["asc", "desc"], int]:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        version, order, last_id = text.split(":")
        if version != "v1" or order not in ("asc", "desc") or not 0 <= int(last_id) <= MAX_ID:
            raise ValueError
        return ("asc" if order == "asc" else "desc"), int(last_id)
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise errors.InvalidInput("invalid cursor: pass nextCursor of the previous page") from None


def _time_query(alias: str, meaning: str) -> Any:
    return Query(
        alias=alias,
        max_length=64,
        description=f"Only the messages {meaning} this time: ISO 8601 with an offset "
        "(`2026-01-31T12:00Z`) or a time ago (`-1h`, `-7d`)",
    )


def _time(value: str | None, parameter: str) -> datetime | None:
    return None if value is None else point_in_time(value, parameter)


@router.post("/queues/{name}", status_code=201, dependencies=ADMIN)
def enqueue(
    queue: QueueArg,
    body: Annotated[EnqueueBody, Body()],
    request: Request,
    new_status: Annotated[bool, Query(alias="newStatus", description=NEW_STATUS_QUERY)] = False,
    dedupe: Annotated[DedupeMode | None, Query(description=DEDUPE_QUERY)] = None,
    dedupe_window: Annotated[
        str | None, Query(alias="dedupeWindow", description=DEDUPE_WINDOW_QUERY)
    ] = None,
) -> EnqueueResponse:
    """Enqueue one message or a list of them (one transaction). A W3C `traceparent` (and
    `tracestate`) request header goes into the headers of messages that carry none: workers
    continue that trace. Each result's `outcome`: inserted, updated, discarded (an idempotent
    queue's unchanged body) or kept (left as it was by the dedupe mode, with its row)."""
    batch = body if isinstance(body, list) else [body]
    if len(batch) > MAX_BATCH:
        raise errors.InvalidInput(f"at most {MAX_BATCH} messages per request")
    if not new_status:
        queue.refuse_unknown_statuses({m.status for m in batch}, override="?newStatus=true")
    context = trace_context.headers_from(request.headers)
    if context is not None:
        batch = [
            m.model_copy(update={"headers": trace_context.with_context(m.headers, context)})
            for m in batch
        ]
    results = queue.enqueue_many(batch, dedupe=dedupe, dedupe_window=dedupe_window)
    return EnqueueResponse(results=[EnqueueResult.of(r) for r in results])


@router.get("/queues/{name}/messages", dependencies=READER)
def list_messages(
    queue: QueueArg,
    status: str | None = None,
    where: Annotated[str | None, Query(max_length=MAX_PREDICATE_LENGTH)] = None,
    message_id: Annotated[
        str | None, Query(alias="messageId", max_length=MAX_MESSAGE_ID_LENGTH)
    ] = None,
    correlation_id: Annotated[
        str | None,
        Query(
            alias="correlationId",
            max_length=MAX_CORRELATION_ID_LENGTH,
            description="Only the messages the caller gave this correlation id",
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    order: Literal["asc", "desc"] = "asc",
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    error_contains: Annotated[
        str | None,
        Query(
            alias="errorContains",
            min_length=1,
            max_length=MAX_ERROR_SEARCH_LENGTH,
            description="Only the messages whose last error contains this text "
            "(case-insensitive; `%` and `_` are plain characters)",
        ),
    ] = None,
    created_after: Annotated[str | None, _time_query("createdAfter", "created at or after")] = None,
    created_before: Annotated[str | None, _time_query("createdBefore", "created before")] = None,
    updated_after: Annotated[
        str | None, _time_query("updatedAfter", "last changed at or after")
    ] = None,
    updated_before: Annotated[
        str | None, _time_query("updatedBefore", "last changed before")
    ] = None,
) -> MessagePage:
    """A page of messages in id order, filtered by status, a predicate on the body, the text
    of the last error and when messages were created or last changed (every filter given must
    hold)."""
    after_id = None
    if cursor is not None:
        order, after_id = decode_cursor(cursor)
    found = queue.messages(
        status=status,
        where=where,
        message_id=message_id,
        correlation_id=correlation_id,
        after_id=after_id,
        limit=limit + 1,
        order=order,
        error_contains=error_contains,
        created_after=_time(created_after, "createdAfter"),
        created_before=_time(created_before, "createdBefore"),
        updated_after=_time(updated_after, "updatedAfter"),
        updated_before=_time(updated_before, "updatedBefore"),
    )
    more = len(found) > limit
    found = found[:limit]
    next_cursor = encode_cursor(order, found[-1].id) if more else None
    return MessagePage(items=[MessageOut.of(m) for m in found], next_cursor=next_cursor)


@router.get(ONE, dependencies=READER)
def get_message(queue: QueueArg, message_id: MessageIdArg) -> MessageOut:
    """One message with everything stored about it."""
    return MessageOut.of(queue.get(message_id))


@router.get(ONE + "/attempts", dependencies=READER)
def get_attempts(queue: QueueArg, message_id: MessageIdArg) -> AttemptList:
    """The message's failed attempts and lost leases (time, worker, correlation id, error)."""
    attempts = queue.attempts(queue.get(message_id))
    return AttemptList(items=[AttemptOut.of(a) for a in attempts])


@router.patch(ONE, dependencies=ADMIN)
def patch_message(queue: QueueArg, message_id: MessageIdArg, patch: MessagePatch) -> MessageOut:
    """Fix a message: its body, status or priority (a Leased one only with force)."""
    if patch.message is None and patch.status is None and patch.priority is None:
        raise errors.InvalidInput("nothing to change: give message, status or priority")
    if not patch.new_status:
        queue.refuse_unknown_statuses([patch.status], override=NEW_STATUS_FIELD_HINT)
    edited = queue.edit(
        message_id,
        body=patch.message,
        status=patch.status,
        priority=patch.priority,
        force=patch.force,
    )
    return MessageOut.of(edited)


@router.delete(ONE, status_code=204, dependencies=ADMIN)
def delete_message(queue: QueueArg, message_id: MessageIdArg, force: bool = False) -> Response:
    """Delete a message (a Leased one only with force)."""
    queue.delete(message_id, force=force)
    return Response(status_code=204)


@router.post("/queues/{name}/status", dependencies=ADMIN)
def set_status(queue: QueueArg, request: SetStatusRequest) -> SetStatusResponse:
    """Set a status by ids, by current status and/or by predicate; dryRun only counts."""
    if not request.new_status:
        queue.refuse_unknown_statuses([request.status], override=NEW_STATUS_FIELD_HINT)
    changed = queue.set_status(
        request.status,
        ids=request.ids,
        from_status=request.from_status,
        where=request.where,
        force=request.force,
        dry_run=request.dry_run,
    )
    return SetStatusResponse(changed=changed, dry_run=request.dry_run)


@router.post("/queues/{name}/delete", dependencies=ADMIN)
def delete_messages(queue: QueueArg, request: SelectedMessages) -> DeletedResponse:
    """Delete the messages with these ids (Leased ones only with force)."""
    return DeletedResponse(deleted=queue.delete_many(request.ids, force=request.force))


@router.post("/queues/{name}/cancel", dependencies=ADMIN)
def cancel_messages(queue: QueueArg, request: SelectedMessages) -> CancelledResponse:
    """Cancel the unfinished messages with these ids; a running handler is told to stop."""
    if request.force:
        raise errors.InvalidInput("force is for delete: cancelling a Leased message needs none")
    return CancelledResponse(cancelled=queue.cancel_many(request.ids))


@router.get("/messages", dependencies=READER)
def find_messages(
    databases: DatabasesArg,
    database: DatabaseNameArg,
    key: Annotated[str, Query(min_length=1, max_length=MAX_MESSAGE_ID_LENGTH)],
) -> FoundMessages:
    """Messages of every queue whose message id or tracking id is `key`, or that share it as
    their correlation id (at most 50 a database), in every database the API serves unless
    `database` names one."""
    found, unreachable = databases.find_messages(key, database)
    return FoundMessages(
        items=[FoundMessage.of(m, queue=queue, database=db) for db, queue, m in found],
        unreachable=[UnreachableDatabase(database=db, error=error) for db, error in unreachable],
    )
