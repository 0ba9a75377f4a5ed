"""`tablequeue workers [QUEUE]`: the worker processes that heartbeat, live and stale."""

from __future__ import annotations

import click

from tablequeue import connect, presence_of

from .completion import queue_names
from .options import db_options
from .output import emit


@click.command()
@click.argument("queue_name", metavar="[QUEUE]", required=False, shell_complete=queue_names)
@db_options
def workers(db_url: str, as_json: bool, queue_name: str | None) -> None:
    """Worker processes heard from in the last hour: live, or stale (no heartbeat for 3
    intervals, at least 10 s: killed or cut off). A clean stop removes a worker at once."""
    with connect(db_url) as database:
        if queue_name is not None:
            database.queue(queue_name)  # an unknown queue is an error, not an empty list
        found = database.workers(queue_name)
    present = presence_of(found)
    data = {
        "workers": [w.to_json() for w in found],
        "live": present.live,
        "stale": present.stale,
    }
    emit(as_json, data)
