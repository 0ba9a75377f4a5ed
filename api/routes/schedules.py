"""A queue's recurring messages: their next and last ticks; running one now."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter

from ..dependencies import ADMIN, READER, QueueArg
from ..schemas import Out

router = APIRouter(tags=["schedules"])


class ScheduleOut(Out):
    name: str
    cron: str
    time_zone: str
    missed: str
    suspend: bool
    message_id: str | None
    topic: str | None
    next_tick: datetime | None
    last_tick: datetime | None
    last_fired_at: datetime | None
    last_message: int | None
    fired: int
    skipped: int


class DeliveryOut(Out):
    queue: str
    outcome: str
    id: int | None


class RunResult(Out):
    schedule: str
    tick: datetime | None
    message: int | None
    """The message enqueued into the queue (null for a schedule with a topic)."""
    topic: str | None
    deliveries: list[DeliveryOut]
    """A schedule with a topic: what publishing did in each subscribed queue."""


@router.get("/queues/{name}/schedules", dependencies=READER)
def list_schedules(queue: QueueArg) -> list[ScheduleOut]:
    """The queue's schedules (`spec.schedules`): next tick, last tick fired, the id of the message
    it enqueued, ticks fired and skipped."""
    return [ScheduleOut.model_validate(vars(view)) for view in queue.schedules()]


@router.post("/queues/{name}/schedules/{schedule}/run", dependencies=ADMIN)
def run_schedule(queue: QueueArg, schedule: str) -> RunResult:
    """Enqueue the schedule's message now (or publish it, for a schedule with a topic; its tick
    is now); its next tick stays as it was."""
    fired = queue.run_schedule(schedule)
    if fired is None:
        return RunResult(schedule=schedule, tick=None, message=None, topic=None, deliveries=[])
    return RunResult(
        schedule=schedule,
        tick=fired.tick,
        message=fired.message.id if fired.message else None,
        topic=fired.topic,
        deliveries=[
            DeliveryOut(queue=d.queue, outcome=d.outcome, id=d.id) for d in fired.deliveries
        ],
    )
