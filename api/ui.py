"""The admin UI: server-rendered pages over the core, small vanilla JS for changes.

Pages read through the core (`Queue.stats`, `Queue.messages`, `Queue.get`) and never count or
load a whole table: messages are paged by id (keyset, 50 a page). Every change is made by
`static/ui.js` calling the JSON API with fetch, so the API's validation, errors and token rules
are the UI's too. The only form the server handles itself is the sign-in, which sets the
`tablequeue_token` cookie the API also accepts.
"""

from __future__ import annotations

import hmac
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, quote, urlencode

import jinja2
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from tablequeue import errors, names
from tablequeue.database import Database
from tablequeue.models import Message
from tablequeue.queue import Queue

from .auth import COOKIE, Auth

HERE = Path(__file__).parent
PAGE_SIZE = 50
MAX_ID = 2**63 - 1
BODY_PREVIEW = 120
COUNT_COLUMNS = [
    names.PENDING,
    names.SLEEPING,
    names.LEASED,
    names.PROCESSED,
    names.ERROR,
    names.ABANDONED,
]
STATUS_CHOICES = ["Pending", "Paused", "OnHold", "Error", "Processed", "Cancelled"]
DEFAULT_STATUS_CHOICES = ["Pending", "Paused", "OnHold"]
HTTP_STATUS_BY_ERROR: list[tuple[type[Exception], int]] = [
    (errors.QueueNotFound, 404),
    (errors.MessageNotFound, 404),
    (errors.DatabaseUnavailable, 503),
    (errors.TableQueueError, 400),
]


def mount(app: FastAPI, database: Database, auth: Auth) -> None:
    """Serve the UI under /ui (and redirect / to it) from the API's process."""
    app.include_router(router(database, auth))
    app.mount("/ui/static", StaticFiles(directory=HERE / "static"), name="ui-static")


# --- formatting -------------------------------------------------------------------------------


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def short_json(value: Any, limit: int = BODY_PREVIEW) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def when(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def age(seconds: float) -> str:
    """3s, 4m 10s, 2h 5m, 3d 4h: the two largest units."""
    total = max(math.floor(seconds), 0)
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if total >= size or (unit == "s" and not parts):
            parts.append(f"{total // size}{unit}")
            total %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


def status_class(status: str) -> str:
    return f"status-{status.lower()}" if status in names.BUILT_IN else "status-custom"


def ordered_statuses(counts: dict[str, int], *extra: str | None) -> list[str]:
    """Built-in statuses in lifecycle order, then the custom ones by name."""
    present = set(counts) | {s for s in extra if s}
    built_in = [s for s in names.BUILT_IN if s in present]
    return built_in + sorted(present - set(names.BUILT_IN))


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
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
    )
    return env


# --- the messages page's paging ---------------------------------------------------------------


@dataclass
class Page:
    messages: list[Message]
    newer: int | None  # pass as `before` for the previous page
    older: int | None  # pass as `after` for the next page


def page_of(
    queue: Queue,
    *,
    status: str | None,
    where: str | None,
    order: Literal["asc", "desc"],
    after: int | None,
    before: int | None,
) -> Page:
    """One page in display order: `after` continues past an id, `before` goes back from one."""
    if before is not None:
        backwards: Literal["asc", "desc"] = "asc" if order == "desc" else "desc"
        found = queue.messages(
            status=status, where=where, after_id=before, limit=PAGE_SIZE + 1, order=backwards
        )
        more_before = len(found) > PAGE_SIZE
        shown = list(reversed(found[:PAGE_SIZE]))
        return Page(
            shown,
            newer=shown[0].id if shown and more_before else None,
            older=shown[-1].id if shown else None,
        )
    found = queue.messages(
        status=status, where=where, after_id=after, limit=PAGE_SIZE + 1, order=order
    )
    shown = found[:PAGE_SIZE]
    return Page(
        shown,
        newer=shown[0].id if shown and after is not None else None,
        older=shown[-1].id if len(found) > PAGE_SIZE else None,
    )


def example_body(queue: Queue) -> Any:
    """What the enqueue form starts with: the declared example, else the newest body, else {}."""
    if queue.spec.example_message is not None:
        return queue.spec.example_message
    newest = queue.messages(limit=1, order="desc")
    return newest[0].message if newest else {}


def _message_id(value: str) -> int | None:
    """A message id from a URL, or None when it cannot be one (ids are BIGINT)."""
    if not (value.isascii() and value.isdigit()) or len(value) > 19 or int(value) > MAX_ID:
        return None
    return int(value)


def _optional_id(value: str | None) -> int | None:
    if value is None or value == "":
        return None
    position = _message_id(value.strip())
    if position is None:
        raise errors.InvalidInput(f"invalid page position {value[:20]!r}: expected an id")
    return position


def _safe_next(target: str | None) -> str:
    """Only redirect back into the UI after sign-in (never to another site)."""
    if target and target.startswith("/ui") and not target.startswith("//"):
        return target
    return "/ui"


def _same_origin(request: Request) -> bool:
    """A form post from one of our own pages (browsers send Origin on POST)."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return request.headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")
    hosts = {request.headers.get("host", ""), request.headers.get("x-forwarded-host", "")}
    return origin.split("://", 1)[-1] in hosts - {""}


# --- routes -----------------------------------------------------------------------------------


def router(database: Database, auth: Auth) -> APIRouter:
    templates = Jinja2Templates(env=_environment())
    ui = APIRouter(include_in_schema=False)

    def signed_in(request: Request) -> None:
        """Pages need a valid token when tokens are configured; else go to the sign-in page."""
        if not auth.enabled:
            return
        try:
            auth.reader(request)
        except HTTPException:
            here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            raise HTTPException(
                303, "sign in first", headers={"Location": "/ui/login?next=" + quote(here)}
            ) from None

    viewer = [Depends(signed_in)]

    def render(request: Request, template: str, status_code: int = 200, **context: Any) -> Response:
        context.setdefault("title", "tablequeue")
        context["auth_enabled"] = auth.enabled
        context["database_url"] = database.shown_url
        return templates.TemplateResponse(request, template, context, status_code=status_code)

    def failure(request: Request, error: errors.TableQueueError) -> Response:
        code = next(code for kind, code in HTTP_STATUS_BY_ERROR if isinstance(error, kind))
        return render(request, "error.html", code, title="Error", error=str(error))

    @ui.get("/")
    def root() -> RedirectResponse:
        return RedirectResponse("/ui", status_code=307)

    # --- sign-in ------------------------------------------------------------------------------

    @ui.get("/ui/login")
    def login_page(request: Request, next: str | None = None) -> Response:
        if not auth.enabled:
            return RedirectResponse(_safe_next(next), status_code=303)
        return render(request, "login.html", title="Sign in", next=_safe_next(next), error=None)

    @ui.post("/ui/login")
    async def login(request: Request) -> Response:
        if not _same_origin(request):
            raise HTTPException(403, "cross-site sign-in refused")
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        token = form.get("token", [""])[0].strip()
        target = _safe_next(form.get("next", [""])[0])
        known = [t for t in (auth.admin_token, auth.read_token) if t]
        if not any(hmac.compare_digest(token.encode(), t.encode()) for t in known):
            error = "That token is not valid here." if auth.enabled else "Sign-in is not needed."
            return render(request, "login.html", 401, title="Sign in", next=target, error=error)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE,
            token,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        return response

    @ui.post("/ui/logout")
    def logout(request: Request) -> Response:
        if not _same_origin(request):
            raise HTTPException(403, "cross-site sign-out refused")
        response = RedirectResponse("/ui/login", status_code=303)
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return response

    # --- queues -------------------------------------------------------------------------------

    @ui.get("/ui", dependencies=viewer)
    def queues_page(request: Request) -> Response:
        try:
            rows = database.queues()
        except errors.TableQueueError as error:
            return failure(request, error)
        categories: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            entry: dict[str, Any] = {"name": row["name"], "default_status": row["default_status"]}
            try:
                entry["stats"] = database.queue(row["name"]).stats()
            except errors.TableQueueError as error:
                entry["problem"] = str(error)
            categories.setdefault(row["category"], []).append(entry)
        for entries in categories.values():
            for entry in entries:
                if "stats" in entry:
                    counts = entry["stats"].counts
                    others = {s: n for s, n in counts.items() if s not in COUNT_COLUMNS}
                    entry["others"] = others
        return render(
            request,
            "queues.html",
            title="Queues",
            categories=sorted(categories.items()),
            columns=COUNT_COLUMNS,
        )

    @ui.get("/ui/queues/{name}", dependencies=viewer)
    def queue_page(
        request: Request,
        name: str,
        status: str = "",
        where: str = "",
        order: str = "desc",
        after: str | None = None,
        before: str | None = None,
    ) -> Response:
        direction: Literal["asc", "desc"] = "asc" if order == "asc" else "desc"
        try:
            queue = database.queue(name)
            stats = queue.stats()
            default_status = database.default_status_of(name)
            example = example_body(queue)
        except errors.TableQueueError as error:
            return failure(request, error)
        status, where = status.strip(), where.strip()
        filter_error = None
        page = Page([], None, None)
        try:
            page = page_of(
                queue,
                status=status or None,
                where=where or None,
                order=direction,
                after=_optional_id(after),
                before=_optional_id(before),
            )
        except errors.TableQueueError as error:
            filter_error = str(error)
        filters = {k: v for k, v in (("status", status), ("where", where)) if v}
        if direction == "asc":
            filters["order"] = direction

        def link(**extra: Any) -> str:
            return f"/ui/queues/{name}?" + urlencode(filters | extra)

        return render(
            request,
            "queue.html",
            title=name,
            queue=queue,
            stats=stats,
            default_status=default_status,
            statuses=ordered_statuses(stats.counts, status),
            status=status,
            where=where,
            order=direction,
            page=page,
            newer_link=link(before=page.newer) if page.newer is not None else None,
            older_link=link(after=page.older) if page.older is not None else None,
            filter_error=filter_error,
            example=pretty_json(example),
            status_choices=STATUS_CHOICES,
            default_status_choices=DEFAULT_STATUS_CHOICES,
            oldest=age(stats.oldest_pending_seconds),
        )

    @ui.get("/ui/queues/{name}/bulk", dependencies=viewer)
    def bulk_page(
        request: Request, name: str, to: str = "", status: str = "", where: str = ""
    ) -> Response:
        """The confirmation step: how many messages a bulk status change would touch."""
        try:
            queue = database.queue(name)
        except errors.TableQueueError as error:
            return failure(request, error)
        to, status, where = to.strip(), status.strip(), where.strip()
        count, problem = 0, None
        try:
            count = queue.set_status(
                to, from_status=status or None, where=where or None, dry_run=True
            )
        except errors.TableQueueError as error:
            problem = str(error)
        back = f"/ui/queues/{name}?" + urlencode(
            {k: v for k, v in (("status", status), ("where", where)) if v}
        )
        return render(
            request,
            "bulk.html",
            title=f"Change status: {name}",
            queue=queue,
            to=to,
            status=status,
            where=where,
            count=count,
            problem=problem,
            back=back,
            view_changed=f"/ui/queues/{name}?" + urlencode({"status": to} if to else {}),
        )

    @ui.get("/ui/queues/{name}/messages/{message_id}", dependencies=viewer)
    def message_page(request: Request, name: str, message_id: str) -> Response:
        try:
            queue = database.queue(name)
            number = _message_id(message_id)
            if number is None:
                raise errors.MessageNotFound(f"no message with id {message_id[:20]!r} in {name!r}")
            message = queue.get(number)
        except errors.TableQueueError as error:
            return failure(request, error)
        return render(
            request,
            "message.html",
            title=f"{name} #{message.id}",
            queue=queue,
            m=message,
            status_choices=[s for s in STATUS_CHOICES if s != message.status],
            unfinished=message.status not in names.FINAL,
        )

    return ui
