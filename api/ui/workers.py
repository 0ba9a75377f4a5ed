"""The workers page: every worker process that heartbeats, live and stale, of every queue of one
database (`?database=`, the default one unless given)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from tablequeue import presence_of

from ..dependencies import DatabaseArg
from .rendering import RenderArg
from .signin import VIEWER

router = APIRouter(include_in_schema=False)


@router.get("/ui/workers", dependencies=VIEWER)
def workers_page(render: RenderArg, database: DatabaseArg) -> Response:
    found = database.workers()
    present = presence_of(found)
    return render(
        "workers.html", title="Workers", workers=found, live=present.live, stale=present.stale
    )
