"""`tablequeue workers [QUEUE]`: the worker processes that heartbeat, live and stale."""

from __future__ import annotations

import click

from tablequeue import WorkerInfo, connect, presence_of
from tablequeue.durations import age

from .completion import queue_names
from .options import db_options, emit

COLUMNS = ("QUEUE", "WORKER", "STATE", "HOST", "PID", "VERSION", "UP", "SEEN", "IN FLIGHT")
NUMBERS = ("PID", "IN FLIGHT", "PROCESSED", "FAILED")


def _row(worker: WorkerInfo) -> dict[str, str]:
    return {
        "QUEUE": worker.queue,
        "WORKER": worker.worker_id,
        "STATE": worker.state,
        "HOST": worker.host,
        "PID": str(worker.pid),
        "VERSION": worker.version,
        "UP": age(worker.up_seconds),
        "SEEN": f"{age(worker.seconds_since_seen)} ago",
        "IN FLIGHT": str(worker.in_flight),
        "PROCESSED": str(worker.processed),
        "FAILED": str(worker.failed),
    }


def table(workers: list[WorkerInfo]) -> str:
    """The workers as an aligned text table, with a line of totals."""
    present = presence_of(workers)
    footer = f"{present.live} live, {present.stale} stale"
    if not workers:
        return f"no worker heartbeats in the last hour ({footer})"
    columns = (*COLUMNS, "PROCESSED", "FAILED")
    rows = [_row(w) for w in workers]
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in columns}

    def line(values: dict[str, str]) -> str:
        cells = [
            values[c].rjust(widths[c]) if c in NUMBERS else values[c].ljust(widths[c])
            for c in columns
        ]
        return "  ".join(cells).rstrip()

    return "\n".join([line({c: c for c in columns}), *(line(r) for r in rows), footer])


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
    emit(as_json, data, table(found))
