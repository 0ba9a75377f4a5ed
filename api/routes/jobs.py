"""Jobs: a message found by its tracking id, in whichever queue holds it; cancelling it."""

from __future__ import annotations

from fastapi import APIRouter

from ..dependencies import ADMIN, READER, DatabaseArg
from ..schemas import Job

router = APIRouter(tags=["jobs"])


@router.get("/jobs/{tracking_id}", dependencies=READER)
def get_job(database: DatabaseArg, tracking_id: str) -> Job:
    """Status, result and progress of a message by its tracking id."""
    queue, message = database.find_job(tracking_id)
    return Job.of(message, queue=queue.name)


@router.post("/jobs/{tracking_id}/cancel", dependencies=ADMIN)
def cancel_job(database: DatabaseArg, tracking_id: str) -> Job:
    """Cancel a message by its tracking id; a running handler is told to stop."""
    queue, _ = database.find_job(tracking_id)
    return Job.of(queue.cancel(tracking_id), queue=queue.name)
