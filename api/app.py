"""The FastAPI application: JSON routes of DESIGN.md ("HTTP API and admin UI"), probes, admin UI.

`create_app` only assembles: the routers live in `routes/` (JSON API, one module a resource) and
`ui/` (pages). Routes are plain `def`s: FastAPI runs them in its thread pool, where the
synchronous core belongs. Every user mistake maps to a 4xx JSON body
`{"error": "...", "detail": [...]}`, or to the error page for a UI page.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response

from tablequeue import Database, errors

from . import ui
from .auth import Auth
from .http_errors import ERROR_RESPONSES, core_error_response, invalid_request
from .limits import MAX_BODY_BYTES, BodySizeLimit
from .routes import ROUTERS


def create_app(
    database: Database, auth: Auth | None = None, max_body_bytes: int = MAX_BODY_BYTES
) -> FastAPI:
    app = FastAPI(
        title="tablequeue",
        summary="Message queues that live in SQL tables",
        version="1",
        responses=ERROR_RESPONSES,
    )
    app.state.database = database
    app.state.auth = auth or Auth()
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    app.exception_handler(errors.TableQueueError)(core_error)
    app.exception_handler(RequestValidationError)(invalid_request)
    for router in ROUTERS:
        app.include_router(router)
    ui.mount(app)
    return app


async def core_error(request: Request, error: errors.TableQueueError) -> Response:
    """A core error: the error page for a UI page, else the JSON error body."""
    if ui.is_page(request):
        return ui.error_page(request, error)
    return core_error_response(error)
