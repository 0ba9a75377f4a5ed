"""The FastAPI application: JSON routes of DESIGN.md ("HTTP API and admin UI") plus probes.

Routes are plain `def`s: FastAPI runs them in its thread pool, where the synchronous core
belongs. Every user mistake maps to a 4xx JSON body `{"error": "...", "detail": [...]}`.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Literal

from fastapi import Body, Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from tablequeue import errors
from tablequeue.database import Database
from tablequeue.queue import Queue

from .auth import Auth
from .limits import BodySizeLimit
from .schemas import (
    MAX_BATCH,
    DefaultStatusRequest,
    EnqueueBody,
    EnqueueResponse,
    EnqueueResult,
    ErrorBody,
    Job,
    MessageOut,
    MessagePage,
    MessagePatch,
    QueueDetail,
    QueueSummary,
    SetStatusRequest,
    SetStatusResponse,
)
from .ui import mount as mount_ui

STATUS_BY_ERROR: list[tuple[type[Exception], int]] = [
    (errors.QueueNotFound, 404),
    (errors.MessageNotFound, 404),
    (errors.Conflict, 409),
    (errors.SchemaTooNew, 409),
    (errors.DatabaseUnavailable, 503),
    (errors.InvalidInput, 400),
    (errors.TableQueueError, 400),
]
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody} for code in (400, 401, 403, 404, 409, 413, 422, 503)
}


def _error(status: int, message: str, detail: list[str] | None = None) -> JSONResponse:
    return JSONResponse(ErrorBody(error=message, detail=detail or []).model_dump(), status)


def _validation_lines(problems: Any) -> list[str]:
    lines = []
    for problem in problems:
        where = ".".join(str(part) for part in problem.get("loc", ()) if part != "body")
        text = str(problem.get("msg", "invalid")).removeprefix("Value error, ")
        lines.append(f"{where}: {text}" if where else text)
    return lines


def _queue(request: Request, name: str) -> Queue:
    database: Database = request.app.state.database
    return database.queue(name)


QueueArg = Annotated[Queue, Depends(_queue)]
MAX_ID = 2**63 - 1  # ids are BIGINT: a larger number would reach the driver and fail there
MessageIdArg = Annotated[int, Path(ge=1, le=MAX_ID)]


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


def create_app(
    database: Database, auth: Auth | None = None, max_body_bytes: int = 10 << 20
) -> FastAPI:
    auth = auth or Auth()
    app = FastAPI(
        title="tablequeue",
        summary="Message queues that live in SQL tables",
        version="1",
        responses=ERROR_RESPONSES,
    )
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    app.state.database = database

    @app.exception_handler(errors.TableQueueError)
    async def _tablequeue_error(_: Request, error: errors.TableQueueError) -> JSONResponse:
        status = next(code for kind, code in STATUS_BY_ERROR if isinstance(error, kind))
        return _error(status, str(error))

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_: Request, error: RequestValidationError) -> JSONResponse:
        lines = _validation_lines(error.errors())
        return _error(422, "invalid request: " + "; ".join(lines)[:500], lines)

    reader = [Depends(auth.reader)]
    admin = [Depends(auth.admin)]

    # --- probes -------------------------------------------------------------------------------

    @app.get("/livez", include_in_schema=False)
    def livez() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", include_in_schema=False)
    def readyz() -> dict[str, str]:
        database.ping()
        return {"status": "ok"}

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    # --- queues -------------------------------------------------------------------------------

    def summary(queue: Queue) -> dict[str, Any]:
        stats = queue.stats()
        return {
            "name": queue.name,
            "table": queue.table.name,
            "category": queue.spec.category,
            "default_status": database.default_status_of(queue.name),
            "counts": stats.counts,
            "backlog": stats.backlog,
            "leased": stats.leased,
            "oldest_pending_seconds": stats.oldest_pending_seconds,
            "health": stats.health,
            "health_reasons": stats.health_reasons,
            "approximate": stats.approximate,
        }

    @app.get("/queues", dependencies=reader, tags=["queues"])
    def list_queues() -> list[QueueSummary]:
        """Every queue with its counts per status and health, by category then name."""
        queues = [database.queue(row["name"]) for row in database.queues()]
        summaries = [QueueSummary.model_validate(summary(q)) for q in queues]
        return sorted(summaries, key=lambda s: (s.category, s.name))

    @app.get("/queues/{name}", dependencies=reader, tags=["queues"])
    def get_queue(queue: QueueArg) -> QueueDetail:
        """Counts, health and settings of one queue."""
        settings = queue.spec.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return QueueDetail.model_validate(summary(queue) | {"settings": settings})

    @app.put("/queues/{name}/default-status", dependencies=admin, tags=["queues"])
    def set_default_status(name: str, request: DefaultStatusRequest) -> dict[str, str]:
        """The status new messages get: Pending, or e.g. Paused to hold them from workers."""
        database.set_default_status(name, request.status)
        return {"queue": name, "defaultStatus": request.status}

    # --- messages -----------------------------------------------------------------------------

    @app.post("/queues/{name}", status_code=201, dependencies=admin, tags=["messages"])
    def enqueue(queue: QueueArg, body: Annotated[EnqueueBody, Body()]) -> EnqueueResponse:
        """Enqueue one message or a list of them (one transaction)."""
        batch = body if isinstance(body, list) else [body]
        if len(batch) > MAX_BATCH:
            raise errors.InvalidInput(f"at most {MAX_BATCH} messages per request")
        results = queue.enqueue_many(batch)
        return EnqueueResponse(results=[EnqueueResult.model_validate(r.__dict__) for r in results])

    @app.get("/queues/{name}/messages", dependencies=reader, tags=["messages"])
    def list_messages(
        queue: QueueArg,
        status: str | None = None,
        where: Annotated[str | None, Query(max_length=4000)] = None,
        message_id: Annotated[str | None, Query(alias="messageId", max_length=400)] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 50,
        order: Literal["asc", "desc"] = "asc",
        cursor: Annotated[str | None, Query(max_length=200)] = None,
    ) -> MessagePage:
        """A page of messages in id order, filtered by status and a predicate on the body."""
        after_id = None
        if cursor is not None:
            order, after_id = decode_cursor(cursor)
        found = queue.messages(
            status=status,
            where=where,
            message_id=message_id,
            after_id=after_id,
            limit=limit + 1,
            order=order,
        )
        more = len(found) > limit
        found = found[:limit]
        next_cursor = encode_cursor(order, found[-1].id) if more else None
        return MessagePage(items=[MessageOut.of(m) for m in found], next_cursor=next_cursor)

    @app.get("/queues/{name}/messages/{message_id}", dependencies=reader, tags=["messages"])
    def get_message(queue: QueueArg, message_id: MessageIdArg) -> MessageOut:
        """One message with everything stored about it."""
        return MessageOut.of(queue.get(message_id))

    @app.patch("/queues/{name}/messages/{message_id}", dependencies=admin, tags=["messages"])
    def patch_message(queue: QueueArg, message_id: MessageIdArg, patch: MessagePatch) -> MessageOut:
        """Fix a message: its body, status or priority (a Leased one only with force)."""
        if patch.message is None and patch.status is None and patch.priority is None:
            raise errors.InvalidInput("nothing to change: give message, status or priority")
        edited = queue.edit(
            message_id,
            body=patch.message,
            status=patch.status,
            priority=patch.priority,
            force=patch.force,
        )
        return MessageOut.of(edited)

    @app.delete(
        "/queues/{name}/messages/{message_id}",
        status_code=204,
        dependencies=admin,
        tags=["messages"],
    )
    def delete_message(queue: QueueArg, message_id: MessageIdArg, force: bool = False) -> Response:
        """Delete a message (a Leased one only with force)."""
        queue.delete(message_id, force=force)
        return Response(status_code=204)

    @app.post("/queues/{name}/status", dependencies=admin, tags=["messages"])
    def set_status(queue: QueueArg, request: SetStatusRequest) -> SetStatusResponse:
        """Set a status by ids, by current status and/or by predicate; dryRun only counts."""
        changed = queue.set_status(
            request.status,
            ids=request.ids,
            from_status=request.from_status,
            where=request.where,
            force=request.force,
            dry_run=request.dry_run,
        )
        return SetStatusResponse(changed=changed, dry_run=request.dry_run)

    # --- jobs ---------------------------------------------------------------------------------

    def job(queue: Queue, message: Any) -> Job:
        return Job.model_validate(message.__dict__ | {"queue": queue.name})

    @app.get("/jobs/{tracking_id}", dependencies=reader, tags=["jobs"])
    def get_job(tracking_id: str) -> Job:
        """Status, result and progress of a message by its tracking id."""
        queue, message = database.find_job(tracking_id)
        return job(queue, message)

    @app.post("/jobs/{tracking_id}/cancel", dependencies=admin, tags=["jobs"])
    def cancel_job(tracking_id: str) -> Job:
        """Cancel a message by its tracking id; a running handler is told to stop."""
        queue, _ = database.find_job(tracking_id)
        return job(queue, queue.cancel(tracking_id))

    # --- admin UI (HTML pages under /ui; / redirects there) -----------------------------------

    mount_ui(app, database, auth)
    return app
