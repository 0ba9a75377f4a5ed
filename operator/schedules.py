"""Firing a Queue's due schedule ticks on the operator's timer, so that recurring messages are
enqueued even while no worker runs (autoscaling to zero: the message they enqueue is what scales
the workers up again). Workers fire the same ticks; the claim in the database makes each tick
enqueued once, whoever is first."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from tablequeue import Queue, TableQueueError
from tablequeue.errors import DatabaseUnavailable
from tablequeue.models import Fired

logger = logging.getLogger(__name__)


def fire_schedules(queue: Queue, label: str) -> list[Fired]:
    """Fire the queue's due ticks; a schedule that fails is logged, never the end of the
    observation (the database being away is raised, as for the counts)."""
    try:
        fired = queue.fire_schedules()
    except DatabaseUnavailable:
        raise
    except (TableQueueError, sa.exc.DBAPIError) as error:  # e.g. the queue's table is gone
        logger.warning("[%s] firing schedules failed: %s", label, error)
        return []
    for one in fired:
        if one.tick is not None:
            logger.info(
                "[%s] schedule %s fired tick %s (%s; %d due)",
                label,
                one.schedule,
                one.tick.isoformat(),
                f"message {one.message.id}" if one.message else f"published to {one.topic}",
                one.due,
            )
        else:
            logger.info("[%s] schedule %s skipped %d missed ticks", label, one.schedule, one.due)
    return fired


def _when(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


def schedule_status(queue: Queue) -> list[dict[str, Any]]:
    """`status.schedules` of the Queue: each schedule's next and last tick and its counts."""
    return [
        {
            "name": view.name,
            "nextTick": _when(view.next_tick),
            "lastTick": _when(view.last_tick),
            "lastMessage": view.last_message,
            "fired": view.fired,
            "skipped": view.skipped,
        }
        for view in queue.schedules()
    ]
