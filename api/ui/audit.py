"""The audit page: who changed what through the API, the UI and the CLI, newest first, 100 a
page, all queues or one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from tablequeue.limits import MAX_ID

from ..dependencies import DatabaseArg
from .rendering import RenderArg
from .signin import VIEWER

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 100


@router.get("/ui/audit", dependencies=VIEWER)
def audit_page(
    render: RenderArg,
    database: DatabaseArg,
    queue: Annotated[str | None, Query()] = None,
    before: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
) -> Response:
    queue = queue or None
    entries = database.audit_entries(queue=queue, before_id=before, limit=PAGE_SIZE)
    older = entries[-1].id if len(entries) == PAGE_SIZE else None
    return render("audit.html", title="Audit", entries=entries, queue=queue, older=older)
