"""Queues: the list with counts and health, one queue's detail, its default status, pausing."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from tablequeue import Database, FlowState, Queue

from ..dependencies import ADMIN, READER, DatabaseArg, QueueArg
from ..schemas import (
    NEW_STATUS_FIELD_HINT,
    DefaultStatusRequest,
    FlowResponse,
    QueueDetail,
    QueueSummary,
)

router = APIRouter(tags=["queues"])


def flow_fields(state: FlowState) -> dict[str, Any]:
    limit = None
    if state.messages_per_second is not None:
        limit = {"messagesPerSecond": state.messages_per_second, "burst": state.burst}
    return {
        "paused": state.paused,
        "paused_at": state.paused_at,
        "rate_limit": limit,
        "global_concurrency": state.max_leased,
    }


def summary(database: Database, queue: Queue, state: FlowState | None = None) -> dict[str, Any]:
    stats = queue.stats()
    state = state or database.flow_state(queue.name)
    return flow_fields(state) | {
        "name": queue.name,
        "table": queue.table.name,
        "category": queue.spec.category,
        "default_status": database.default_status_of(queue.name),
        "counts": stats.counts,
        "backlog": stats.backlog,
        "leased": stats.leased,
        "oldest_pending_seconds": stats.oldest_pending_seconds,
        "health": stats.health,
        "health_reasons": stats.health_reasons,
        "approximate": stats.approximate,
    }


@router.get("/queues", dependencies=READER)
def list_queues(database: DatabaseArg) -> list[QueueSummary]:
    """Every queue with its counts per status and health, by category then name."""
    queues = [database.queue(row["name"]) for row in database.queues()]
    flows = database.flow_states()
    summaries = [
        QueueSummary.model_validate(summary(database, q, flows.get(q.name))) for q in queues
    ]
    return sorted(summaries, key=lambda s: (s.category, s.name))


@router.get("/queues/{name}", dependencies=READER)
def get_queue(database: DatabaseArg, queue: QueueArg) -> QueueDetail:
    """Counts, health and settings of one queue."""
    settings = queue.spec.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return QueueDetail.model_validate(summary(database, queue) | {"settings": settings})


@router.put("/queues/{name}/default-status", dependencies=ADMIN)
def set_default_status(
    database: DatabaseArg, name: str, request: DefaultStatusRequest
) -> dict[str, str]:
    """The status new messages get: Pending, or e.g. Paused (with newStatus) to hold them from
    workers."""
    if not request.new_status:
        database.queue(name).refuse_unknown_statuses(
            [request.status], override=NEW_STATUS_FIELD_HINT
        )
    database.set_default_status(name, request.status)
    return {"queue": name, "defaultStatus": request.status}


@router.post("/queues/{name}/pause", dependencies=ADMIN)
def pause_queue(database: DatabaseArg, name: str) -> FlowResponse:
    """Workers lease nothing from the queue until it is resumed; enqueue still works and
    messages already leased finish. Holds until the Queue's `spec.paused` itself changes."""
    return FlowResponse.model_validate({"queue": name} | flow_fields(database.pause(name)))


@router.post("/queues/{name}/resume", dependencies=ADMIN)
def resume_queue(database: DatabaseArg, name: str) -> FlowResponse:
    """Workers lease again, each within its longest poll delay."""
    return FlowResponse.model_validate({"queue": name} | flow_fields(database.resume(name)))
