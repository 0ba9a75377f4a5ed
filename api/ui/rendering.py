"""Rendering the admin UI's pages: the Jinja environment, its filters, and the error page.

Templates and static files live beside this package, in `api/templates` and `api/static`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

import jinja2
from fastapi import Depends, Request
from fastapi.responses import Response
from fastapi.templating import Jinja2Templates

from tablequeue import errors, names
from tablequeue.durations import age
from tablequeue.error_text import exception_line
from tablequeue.progress import progress_bar
from tablequeue.settings.api import DEFAULT_DATABASE

from ..dependencies import AuthArg, DatabaseNameArg, DatabasesArg, get_auth, get_databases
from ..http_errors import public_message, status_of

API_FOLDER = Path(__file__).resolve().parent.parent
TEMPLATES = API_FOLDER / "templates"
STATIC = API_FOLDER / "static"
BODY_PREVIEW = 120
ERROR_PREVIEW = 100


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def short_json(value: Any, limit: int = BODY_PREVIEW) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def when(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def clipped(text: str, limit: int = ERROR_PREVIEW) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def status_class(status: str) -> str:
    return f"status-{status.lower()}" if status in names.BUILT_IN else "status-custom"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pretty_json=pretty_json,
        short_json=short_json,
        when=when,
        age=age,
        status_class=status_class,
        exception_line=exception_line,
        clipped=clipped,
        progress_bar=progress_bar,
    )
    return env


templates = Jinja2Templates(env=_environment())


@dataclass(frozen=True)
class Renderer:
    """Renders a page for one request, with what every page shows: "Sign out" when signed in;
    write controls only when the request may change things (`can_write`: the server refuses the
    changes anyway, the page need not offer them); the search box and live refresh for whoever
    may read (`viewer`); the database URL, password masked, for
    admins only: a reader need not learn where the database lives. `database_name`: the
    database the page shows (None: the default one), which its links and forms keep."""

    request: Request
    viewer: bool
    signed_in: bool
    can_write: bool
    database_url: str
    database_name: str | None = None

    def in_database(self, path: str, name: str | None = None) -> str:
        """`path` (a page or an API route) in the database `name`, by default the page's: with
        `database=` added to its query unless it is the default database."""
        name = name if name is not None else self.database_name
        if name is None or name == DEFAULT_DATABASE:
            return path
        return path + ("&" if "?" in path else "?") + urlencode({"database": name})

    def __call__(self, template: str, status_code: int = 200, **context: Any) -> Response:
        context.setdefault("title", "tablequeue")
        context["viewer"] = self.viewer
        context["signed_in"] = self.signed_in
        context["can_write"] = self.can_write
        context["database_url"] = self.database_url
        context["database_name"] = self.database_name
        context["in_db"] = self.in_database
        return templates.TemplateResponse(self.request, template, context, status_code=status_code)


def renderer(
    request: Request, databases: DatabasesArg, name: DatabaseNameArg, auth: AuthArg
) -> Renderer:
    admin, signed_in = auth.is_admin(request), auth.signed_in(request)
    url = databases.get(name).shown_url if admin else ""
    return Renderer(request, signed_in or not auth.enabled, signed_in, admin, url, name)


RenderArg = Annotated[Renderer, Depends(renderer)]


def error_page(request: Request, error: errors.TableQueueError) -> Response:
    """A page that cannot be shown: the error in one line, with the API's status code."""
    return status_page(request, status_of(error), public_message(error))


def status_page(request: Request, status: int, message: str) -> Response:
    """The error page with `message` and the HTTP `status` (e.g. 404 for an unknown page)."""
    databases = get_databases(request)
    known = databases.find(request) is not None  # an unknown name is the error shown
    name = request.query_params.get("database") if known else None
    render = renderer(request, databases, name, get_auth(request))
    return render("error.html", status, title="Error", error=message)
