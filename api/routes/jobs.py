"""Jobs: a message found by its tracking id, in whichever queue holds it; cancelling it."""

from __future__ import annotations

from fastapi import APIRouter

from tablequeue.models import Job as CoreJob

from ..dependencies import ADMIN, READER, DatabaseArg
from ..schemas import Job

router = APIRouter(tags=["jobs"])


@router.get("/jobs/{tracking_id}", dependencies=READER)
def get_job(database: DatabaseArg, tracking_id: str) -> Job:
    """Status, result and progress of a message by its tracking id: from its row while it
    has one (`source: queue`), else from its kept outcome (`source: results`, keepResultsFor)."""
    return Job.of(database.find_job(tracking_id))


@router.post("/jobs/{tracking_id}/cancel", dependencies=ADMIN)
def cancel_job(database: DatabaseArg, tracking_id: str) -> Job:
    """Cancel a message by its tracking id; a running handler is told to stop."""
    queue, _ = database.find_message(tracking_id)
    return Job.of(CoreJob.of_message(queue.name, queue.cancel(tracking_id)))
