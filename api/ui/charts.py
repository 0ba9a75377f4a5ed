"""The chart pages: one queue's past and every queue's, drawn in the browser by `charts.js`
with uPlot (vendored in `static/`, see `static/VENDORED.md`) from the JSON API's `/charts`
routes, so the page and the API show the same numbers."""

from __future__ import annotations

import contextlib
from urllib.parse import urlencode

from fastapi import APIRouter
from fastapi.responses import Response

from tablequeue import errors
from tablequeue.rollup import HORIZON, WINDOWS

from ..databases import Databases
from ..dependencies import DatabaseArg, DatabasesArg
from .rendering import RenderArg
from .signin import VIEWER

router = APIRouter(include_in_schema=False)


def _window(window: str) -> str:
    return window if window in WINDOWS else "1h"


def listed_charts_path(databases: Databases, window: str) -> str:
    """The `/charts/queues` request of every queue the reachable databases hold."""
    refs = []
    for name, database in databases:
        with contextlib.suppress(errors.DatabaseUnavailable):
            shown = "" if database is databases.default else name + "/"
            refs += [shown + row["name"] for row in database.queues()]
    return "/charts/queues?" + urlencode([("window", window)] + [("queue", r) for r in refs])


@router.get("/ui/charts", dependencies=VIEWER)
def all_charts_page(render: RenderArg, databases: DatabasesArg, window: str = "1h") -> Response:
    """The totals are the default database's; the charts by queue show every database's
    queues (`/charts/queues`)."""
    window = _window(window)
    return render(
        "charts.html",
        title="Charts",
        queue=None,
        list_path=listed_charts_path(databases, window),
        window=window,
        windows=list(WINDOWS),
        horizon_days=HORIZON.days,
    )


@router.get("/ui/queues/{name}/charts", dependencies=VIEWER)
def queue_charts_page(
    render: RenderArg, database: DatabaseArg, name: str, window: str = "1h"
) -> Response:
    queue = database.queue(name)  # 404 page for a queue that does not exist
    return render(
        "charts.html",
        title=f"Charts: {name}",
        queue=queue,
        window=_window(window),
        windows=list(WINDOWS),
        horizon_days=HORIZON.days,
    )
