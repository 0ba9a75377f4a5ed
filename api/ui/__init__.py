"""The admin UI: server-rendered pages over the core, small vanilla JS for changes.

Pages read through the core and never count or load a whole table: messages are paged by id
(keyset, 50 a page). Every change is made by `static/ui.js` calling the JSON API with fetch, so
the API's validation, errors and token rules are the UI's too. The only forms the server handles
itself are the sign-in (`signin.py`) and the find box (`find.py`, a GET). `static/live.js`
refreshes the parts of a page marked `data-live`; `static/theme.js` picks light or dark.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles

from . import audit, charts, find, messages, queues, signin, workers
from .rendering import STATIC, error_page, status_page

PREFIX = "/ui"
ROUTERS = [
    queues.router,
    signin.router,
    messages.router,
    charts.router,
    workers.router,
    find.router,
    audit.router,
]


def mount(app: FastAPI) -> None:
    """Serve the UI under /ui (and redirect / to it) from the API's process."""
    for router in ROUTERS:
        app.include_router(router)
    app.mount(PREFIX + "/static", StaticFiles(directory=STATIC), name="ui-static")


def is_page(request: Request) -> bool:
    """Whether a request is for a UI page (whose errors are HTML) rather than the JSON API."""
    return request.url.path == PREFIX or request.url.path.startswith(PREFIX + "/")


__all__ = ["error_page", "is_page", "mount", "status_page"]
