"""The one table from the core's errors to HTTP status codes, and the JSON error body.

Both the JSON API's exception handlers and the admin UI's error page take their status from
`status_of`. Every user mistake is a 4xx `{"error": "...", "detail": [...]}`.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from tablequeue import Database, errors


class ErrorBody(BaseModel):
    error: str
    detail: list[str] = Field(default_factory=list)


STATUS_BY_ERROR: list[tuple[type[errors.TableQueueError], int]] = [
    (errors.QueueNotFound, 404),
    (errors.MessageNotFound, 404),
    (errors.ScheduleNotFound, 404),
    (errors.Conflict, 409),
    (errors.SchemaTooNew, 409),
    (errors.DatabaseUnavailable, 503),
    (errors.InvalidInput, 400),
    (errors.TableQueueError, 400),
]
"""First match wins: subclasses before the classes they extend."""

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody} for code in (400, 401, 403, 404, 409, 413, 422, 503)
}
"""The error statuses every route may answer, for the OpenAPI document."""


def status_of(error: errors.TableQueueError) -> int:
    return next(code for kind, code in STATUS_BY_ERROR if isinstance(error, kind))


def error_response(status: int, message: str, detail: list[str] | None = None) -> JSONResponse:
    return JSONResponse(ErrorBody(error=message, detail=detail or []).model_dump(), status)


def public_message(error: errors.TableQueueError) -> str:
    """The error's message as clients see it: never where the database lives."""
    return error.public


def lost_table(database: Database, name: str) -> errors.QueueTableMissing | None:
    """What a statement that failed on queue `name` means when the queue is registered but its
    table is gone (dropped outside tablequeue); None otherwise."""
    try:
        if database.queue(name).table_exists():
            return None
    except errors.TableQueueError:
        return None
    return errors.QueueTableMissing(
        f"the table of queue {name!r} is missing (dropped outside tablequeue?): apply the queue "
        "again"
    )


def core_error_response(error: errors.TableQueueError) -> JSONResponse:
    return error_response(status_of(error), public_message(error))


async def invalid_request(_: Request, error: RequestValidationError) -> JSONResponse:
    """A request that does not match its route's parameters or body model: 422, one line each."""
    lines = _validation_lines(error.errors())
    return error_response(422, "invalid request: " + "; ".join(lines)[:500], lines)


def _validation_lines(problems: Any) -> list[str]:
    lines = []
    for problem in problems:
        where = ".".join(str(part) for part in problem.get("loc", ()) if part != "body")
        text = str(problem.get("msg", "invalid")).removeprefix("Value error, ")
        lines.append(f"{where}: {text}" if where else text)
    return lines
