"""The queue pages: every queue with its counts, one queue's messages, the bulk confirmation.

Pages read through the core (`Queue.stats`, `Queue.messages`) and never count or load a whole
table. A filter that does not parse is shown on the page; a queue that cannot be read is the
error page (see `app.py`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Query
from fastapi.responses import RedirectResponse, Response

from tablequeue import Database, errors, names
from tablequeue.durations import age

from ..dependencies import DatabaseArg, DatabasesArg
from . import search
from .paging import Page, example_body, page_of, page_position
from .rendering import RenderArg, pretty_json
from .signin import VIEWER

router = APIRouter(include_in_schema=False)

COUNT_COLUMNS = [
    names.PENDING,
    names.SLEEPING,
    names.LEASED,
    names.PROCESSED,
    names.ERROR,
    names.ABANDONED,
]
MINOR_COLUMNS = {names.SLEEPING, names.LEASED, names.ABANDONED}
"""Count columns a narrow window leaves out of the queue list (ui.css)."""
STATUS_CHOICES = ["Pending", "Paused", "OnHold", "Error", "Processed", "Cancelled"]
DEFAULT_STATUS_CHOICES = ["Pending", "Paused", "OnHold"]


def ordered_statuses(counts: dict[str, int], *extra: str | None) -> list[str]:
    """Built-in statuses in lifecycle order, then the custom ones by name."""
    present = set(counts) | {s for s in extra if s}
    built_in = [s for s in names.BUILT_IN if s in present]
    return built_in + sorted(present - set(names.BUILT_IN))


def queue_link(name: str, **query: Any) -> str:
    return f"/ui/queues/{name}?" + urlencode(query)


def _filters(status: str, where: str) -> dict[str, str]:
    return {k: v for k, v in (("status", status), ("where", where)) if v}


@router.get("/")
def root() -> RedirectResponse:
    return RedirectResponse("/ui", status_code=307)


@router.get("/ui", dependencies=VIEWER)
def queues_page(render: RenderArg, databases: DatabasesArg) -> Response:
    sections = [database_section(name, database) for name, database in databases]
    down = [section["error"] for section in sections if "error" in section]
    if len(down) == len(sections):  # nothing to show: the page is unavailable, as the API is
        raise down[0]
    return render(
        "queues.html",
        title="Queues",
        databases=sections,
        several=databases.several,
        columns=COUNT_COLUMNS,
        minor=MINOR_COLUMNS,
    )


def database_section(name: str, database: Database) -> dict[str, Any]:
    """One database of the queue list: its queues by category, or why it cannot be read."""
    section: dict[str, Any] = {"name": name, "engine": database.dialect.name, "categories": []}
    try:
        section["categories"] = queues_by_category(database)
    except errors.DatabaseUnavailable as error:
        section["problem"], section["error"] = error.public, error
    return section


def queues_by_category(database: Database) -> list[tuple[str, list[dict[str, Any]]]]:
    categories: dict[str, list[dict[str, Any]]] = {}
    flows = database.flow_states()
    for row in database.queues():
        flow = flows.get(row["name"])
        entry: dict[str, Any] = {
            "name": row["name"],
            "default_status": row["default_status"],
            "paused": flow is not None and flow.paused,
        }
        try:
            stats = database.queue(row["name"]).stats()
        except errors.TableQueueError as error:
            entry["problem"] = error.public
        else:
            entry["stats"] = stats
            entry["others"] = {s: n for s, n in stats.counts.items() if s not in COUNT_COLUMNS}
        categories.setdefault(row["category"], []).append(entry)
    return sorted(categories.items())


@router.get("/ui/queues/{name}", dependencies=VIEWER)
def queue_page(
    render: RenderArg,
    database: DatabaseArg,
    name: str,
    status: str = "",
    where: str = "",
    order: str = "desc",
    after: str | None = None,
    before: str | None = None,
    error_contains: Annotated[str, Query(alias="errorContains")] = "",
    created_after: Annotated[str, Query(alias="createdAfter")] = "",
    created_before: Annotated[str, Query(alias="createdBefore")] = "",
    updated_after: Annotated[str, Query(alias="updatedAfter")] = "",
    updated_before: Annotated[str, Query(alias="updatedBefore")] = "",
) -> Response:
    direction: Literal["asc", "desc"] = "asc" if order == "asc" else "desc"
    searched = search.given(
        errorContains=error_contains,
        createdAfter=created_after,
        createdBefore=created_before,
        updatedAfter=updated_after,
        updatedBefore=updated_before,
    )
    queue = database.queue(name)
    stats = queue.stats()
    workers = database.workers(name)
    default_status = database.default_status_of(name)
    schedules = queue.schedules()
    example = example_body(queue)
    status, where = status.strip(), where.strip()
    filter_error = None
    page = Page([], None, None)
    try:
        page = page_of(
            queue,
            status=status or None,
            where=where or None,
            order=direction,
            after=page_position(after),
            before=page_position(before),
            search=search.arguments(searched),
        )
    except errors.TableQueueError as error:
        filter_error = error.public
    filters = _filters(status, where) | searched
    if direction == "asc":
        filters["order"] = direction
    newer = older = None
    if page.newer is not None:
        newer = render.in_database(queue_link(name, **filters, before=page.newer))
    if page.older is not None:
        older = render.in_database(queue_link(name, **filters, after=page.older))
    return render(
        "queue.html",
        title=name,
        queue=queue,
        stats=stats,
        default_status=default_status,
        flow=database.flow_state(name),
        statuses=ordered_statuses(stats.counts, status),
        status=status,
        where=where,
        searched=searched,
        order=direction,
        page=page,
        newer_link=newer,
        older_link=older,
        filter_error=filter_error,
        example=pretty_json(example),
        status_choices=STATUS_CHOICES,
        default_status_choices=DEFAULT_STATUS_CHOICES,
        oldest=age(stats.oldest_pending_seconds),
        workers=workers,
        live_workers=sum(1 for w in workers if w.state == "live"),
        schedules=schedules,
    )


@router.get("/ui/queues/{name}/bulk", dependencies=VIEWER)
def bulk_page(
    render: RenderArg,
    database: DatabaseArg,
    name: str,
    to: str = "",
    status: str = "",
    where: str = "",
) -> Response:
    """The confirmation step: how many messages a bulk status change would touch."""
    queue = database.queue(name)
    to, status, where = to.strip(), status.strip(), where.strip()
    count, problem = 0, None
    try:
        count = queue.set_status(to, from_status=status or None, where=where or None, dry_run=True)
    except errors.TableQueueError as error:
        problem = error.public
    return render(
        "bulk.html",
        title=f"Change status: {name}",
        queue=queue,
        to=to,
        status=status,
        where=where,
        count=count,
        problem=problem,
        back=render.in_database(queue_link(name, **_filters(status, where))),
        view_changed=render.in_database(queue_link(name, **({"status": to} if to else {}))),
    )
