"""The chart pages: one queue's past and every queue's, drawn in the browser by `charts.js`
with uPlot (vendored in `static/`, see `static/VENDORED.md`) from the JSON API's `/charts`
routes, so the page and the API show the same numbers."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from tablequeue.rollup import HORIZON, WINDOWS

from ..dependencies import DatabaseArg
from .rendering import RenderArg
from .signin import VIEWER

router = APIRouter(include_in_schema=False)


def _window(window: str) -> str:
    return window if window in WINDOWS else "1h"


@router.get("/ui/charts", dependencies=VIEWER)
def all_charts_page(render: RenderArg, window: str = "1h") -> Response:
    return render(
        "charts.html",
        title="Charts",
        queue=None,
        window=_window(window),
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
