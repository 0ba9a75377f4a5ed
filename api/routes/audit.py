"""The audit trail: who changed what through the API, the admin UI and the CLI."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import Field

from tablequeue.limits import MAX_ID

from ..dependencies import READER, DatabaseArg
from ..schemas import Out

router = APIRouter(tags=["audit"])


class AuditEntryOut(Out):
    id: int
    at: str = Field(description="When (database clock, ISO 8601)")
    who: str = Field(description="The admin token, the open API, or the CLI's OS user")
    via: str = Field(description="api, ui or cli")
    address: str | None = Field(None, description="The client's address (API and UI)")
    action: str = Field(
        description="set-status, edit, delete, cancel, purge, pause, resume, "
        "set-default-status or run-schedule"
    )
    queue: str | None
    target: dict[str, Any] | None = Field(
        None, description="The ids, tracking id, predicate, status or schedule the change chose"
    )
    rows: int | None = Field(None, description="How many messages it changed")


class AuditPage(Out):
    entries: list[AuditEntryOut]
    next_before_id: int | None = Field(
        None, description="Pass as beforeId for the next (older) page; null on the last"
    )


@router.get("/audit", dependencies=READER)
def audit_trail(
    database: DatabaseArg,
    queue: Annotated[str | None, Query(description="Only this queue's changes")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    before_id: Annotated[int | None, Query(alias="beforeId", ge=1, le=MAX_ID)] = None,
) -> AuditPage:
    """Changes people and tools made, newest first (kept 90 days by default)."""
    entries = database.audit_entries(queue=queue, before_id=before_id, limit=limit)
    return AuditPage(
        entries=[AuditEntryOut.model_validate(e.to_json()) for e in entries],
        next_before_id=entries[-1].id if len(entries) == limit else None,
    )
