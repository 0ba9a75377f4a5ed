"""The FastAPI application: JSON routes (docs/guides/api.md, docs/reference/http-api.md),
probes, admin UI.

`create_app` only assembles: the routers live in `routes/` (JSON API, one module a resource) and
`ui/` (pages). Routes are plain `def`s: FastAPI runs them in its thread pool, where the
synchronous core belongs. Every user mistake maps to a 4xx JSON body
`{"error": "...", "detail": [...]}`, or to the error page for a UI page.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from tablequeue import Database, errors

from . import docs_page, ui
from .auth import Auth
from .csrf import CrossOriginGuard, is_loopback
from .databases import Databases
from .dependencies import auth_refusal
from .http_errors import (
    ERROR_RESPONSES,
    core_error_response,
    error_response,
    invalid_request,
    lost_table,
)
from .limits import MAX_BODY_BYTES, BodySizeLimit
from .routes import ROUTERS

log = logging.getLogger("tablequeue.api")


def create_app(
    database: Database | Mapping[str, Database],
    auth: Auth | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    listen_host: str | None = None,
) -> FastAPI:
    """`database`: one, or several by name (one of them `default`, what routes without
    `?database=` read). `listen_host`: the address uvicorn binds; without tokens on a loopback
    address, requests naming another Host are refused (DNS rebinding, see csrf.py)."""
    app = FastAPI(
        title="tablequeue",
        summary="Message queues that live in SQL tables",
        version="1",
        responses=ERROR_RESPONSES,
        docs_url=None,  # docs_page.py serves /docs from vendored files
        redoc_url=None,  # ReDoc would load from a CDN
    )
    app.state.databases = Databases.of(database)
    app.state.auth = auth = auth or Auth()
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    loopback_only = not auth.enabled and listen_host is not None and is_loopback(listen_host)
    app.add_middleware(CrossOriginGuard, loopback_only=loopback_only)  # runs first
    app.exception_handler(errors.TableQueueError)(core_error)
    app.exception_handler(sa.exc.DBAPIError)(statement_error)
    app.exception_handler(RequestValidationError)(invalid_request_after_auth)
    app.exception_handler(HTTPException)(http_error)
    for router in ROUTERS:
        app.include_router(router)
    app.include_router(docs_page.router)
    ui.mount(app)
    return app


async def core_error(request: Request, error: errors.TableQueueError) -> Response:
    """A core error: the error page for a UI page, else the JSON error body."""
    if isinstance(error, errors.DatabaseUnavailable):
        log.warning("%s", error)  # clients are told only "database unavailable"
    if ui.is_page(request):
        return ui.error_page(request, error)
    return core_error_response(error)


async def statement_error(request: Request, error: sa.exc.DBAPIError) -> Response:
    """A statement the database refused: when the queue named in the path (or, for a route
    that names none, any queue of the database) has lost its table (dropped outside
    tablequeue), a 409 that says so; anything else is a 500, logged."""
    name = request.path_params.get("name")
    databases: Databases = request.app.state.databases
    if (database := databases.find(request)) is not None:
        queue = name if isinstance(name, str) else None
        missing = await run_in_threadpool(lost_table, database, queue)
        if missing is not None:
            return await core_error(request, missing)
    log.error("statement failed: %s", error)
    return error_response(500, "internal error: the database refused a statement")


async def http_error(request: Request, error: HTTPException) -> Response:
    """401/403 from the token rules, 404/405 for unknown routes: the JSON error body.

    UI pages keep Starlette's answer (their sign-in redirect is a 303 with a Location header).
    """
    if ui.is_page(request) and error.status_code in (404, 405):
        return ui.status_page(request, error.status_code, f"no such page: {request.url.path}")
    if ui.is_page(request):
        return await http_exception_handler(request, error)
    response = error_response(error.status_code, str(error.detail))
    response.headers.update(error.headers or {})
    return response


async def invalid_request_after_auth(request: Request, error: RequestValidationError) -> Response:
    """A request the token rules refuse gets 401/403 even when its body is broken too."""
    if (refused := auth_refusal(request)) is not None:
        return await http_error(request, refused)
    return await invalid_request(request, error)
