"""The one table from the core's errors to HTTP status codes, and the JSON error body.

Both the JSON API's exception handlers and the admin UI's error page take their status from
`status_of`. Every user mistake is a 4xx `{"error": "...", "detail": [...]}`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from tablequeue import Database, errors

from . import unknown_fields
from .databases import DatabaseNotFound


class ErrorBody(BaseModel):
    error: str
    detail: list[str] = Field(default_factory=list)


STATUS_BY_ERROR: list[tuple[type[errors.TableQueueError], int]] = [
    (errors.QueueNotFound, 404),
    (errors.MessageNotFound, 404),
    (errors.ScheduleNotFound, 404),
    (errors.SubscriptionNotFound, 404),
    (DatabaseNotFound, 404),
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


def lost_table(database: Database, name: str | None) -> errors.QueueTableMissing | None:
    """What a statement that failed on queue `name` (None: on any of the database's queues, for
    routes that read several, such as the queue list or a publish) means when a registered
    queue's table is gone (dropped outside tablequeue); None otherwise."""
    try:
        names = [name] if name is not None else [row["name"] for row in database.queues()]
        missing = [each for each in names if not database.queue(each).table_exists()]
    except errors.TableQueueError:
        return None
    if not missing:
        return None
    return errors.QueueTableMissing(
        f"the table of queue {missing[0]!r} is missing (dropped outside tablequeue?): apply the "
        "queue again"
    )


def core_error_response(error: errors.TableQueueError) -> JSONResponse:
    return error_response(status_of(error), public_message(error))


async def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
    """A request that does not match its route's parameters or body model: 422, one line each."""
    annotation = unknown_fields.body_annotation(request)
    lines = _validation_lines(
        error.errors(), error.body, lambda path: unknown_fields.accepted_fields(annotation, path)
    )
    return error_response(422, "invalid request: " + "; ".join(lines)[:500], lines)


ENVELOPE = 'expected {"message": ...}'
"""What an enqueue or publish body is: the message goes under `message`, beside its options."""


FieldsAt = Callable[[list[str]], dict[str, bool]]
"""The JSON names of the fields the body accepts at a path (list indexes as digits), each with
whether it is required."""


def _validation_lines(problems: Any, body: Any, fields_at: FieldsAt) -> list[str]:
    """One line per problem, named by where it is in the request. A body union (one message or
    a list) reports only the problems of the branch the body's shape chose, a body without
    its `message` envelope says so instead of listing its keys as extra fields, and a misspelt
    field gets the closest accepted one."""
    lines: list[str] = []
    for problem in problems:
        loc = [str(part) for part in problem.get("loc", ())]
        branch = next((part for part in loc if "[" in part), None)
        if branch is not None and branch.startswith("list[") != isinstance(body, list):
            continue  # the other branch of the union: its complaint is about the shape
        path = [part for part in loc if part != "body" and "[" not in part]
        in_body = loc[:1] == ["body"]
        line = _body_line(problem, path, body, branch is not None, fields_at) if in_body else None
        if line is None:
            text = str(problem.get("msg", "invalid")).removeprefix("Value error, ")
            where = ".".join(path)
            line = f"{where}: {text}" if where else text
        if line and line not in lines:
            lines.append(line)
    return lines


def _body_line(
    problem: Any, path: list[str], body: Any, union: bool, fields_at: FieldsAt
) -> str | None:
    """The readable line for the common body mistakes; "" to drop the problem (another line says
    it); None for the generic line. `union`: the body may be one message or a list of them."""
    kind = problem.get("type")
    if kind == "json_invalid":
        reason = problem.get("ctx", {}).get("error", "invalid JSON")
        return f"the body is not JSON: {reason} (at character {path[0] if path else '?'})"
    if kind == "missing" and not path:
        return "a JSON body is required"
    listed = isinstance(body, list) and bool(path) and path[0].isdigit()
    item = body[int(path[0])] if listed else body
    prefix = f"{path[0]}: " if listed else ""
    if kind in ("model_attributes_type", "dict_type") and len(path) == int(listed):
        accepted = " (or a list of them)" if union and not listed else ""
        return f"{prefix}{ENVELOPE}{accepted}; got {_kind_of(item)}"
    envelope = fields_at(path[:1] if listed else []).get("message", False)
    envelope_missing = envelope and isinstance(item, dict) and "message" not in item
    misspelt = envelope_missing and any(
        unknown_fields.closest(str(key), ["message"]) for key in item
    )
    if envelope_missing and path[-1:] == ["message"] and kind == "missing":
        if misspelt:
            return ""  # the unknown field's line names `message`
        keys = ", ".join(sorted(map(str, item)))[:200]
        got = f"an object with keys {keys}" if item else "an empty object"
        return f"{prefix}{ENVELOPE}; got {got}"
    if kind == "extra_forbidden" and path:
        if envelope_missing and not misspelt:
            return ""  # the envelope's line says what the body should be
        where = ".".join(path[:-1])
        text = unknown_fields.line(path[-1], sorted(fields_at(path[:-1])))
        return f"{where}: {text}" if where else text
    return None


def _kind_of(value: Any) -> str:
    kinds = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number" if isinstance(value, int | float) else "an object")
