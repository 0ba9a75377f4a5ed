"""`tablequeue schedules QUEUE`: a queue's recurring messages, and running one now."""

from __future__ import annotations

from typing import Any

import click

from tablequeue import connect

from .completion import queue_names
from .options import db_options
from .output import emit


@click.command()
@click.argument("queue_name", metavar="QUEUE", shell_complete=queue_names)
@click.option("--run", "run", metavar="SCHEDULE", help="Enqueue this schedule's message now.")
@db_options
def schedules(db_url: str, as_json: bool, queue_name: str, run: str | None) -> None:
    """A queue's schedules (spec.schedules): next tick, last tick fired, counts."""
    with connect(db_url) as database:
        queue = database.queue(queue_name)
        if run is not None:
            fired = queue.run_schedule(run)
            message = fired.message.id if fired and fired.message else None
            topic = fired.topic if fired else None
            delivered = [d.queue for d in fired.deliveries if d.id is not None] if fired else []
            if fired is None and not as_json:
                click.echo(f"schedule {run}: fired by another process at the same time", err=True)
            emit(
                as_json,
                {
                    "schedule": run,
                    "tick": fired.tick if fired else None,
                    "message": message,
                    "topic": topic,
                    "deliveredTo": delivered,
                },
            )
            return
        views = queue.schedules()
    data: list[dict[str, Any]] = [
        {
            "name": v.name,
            "cron": v.cron,
            "timeZone": v.time_zone,
            "missed": v.missed,
            "suspend": v.suspend,
            "topic": v.topic,
            "nextTick": v.next_tick,
            "lastTick": v.last_tick,
            "lastFiredAt": v.last_fired_at,
            "lastMessage": v.last_message,
            "fired": v.fired,
            "skipped": v.skipped,
        }
        for v in views
    ]
    emit(as_json, data, empty=f"queue {queue_name} has no schedules")
