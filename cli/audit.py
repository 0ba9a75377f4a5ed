"""`tablequeue audit`: who changed what through the API, the admin UI and the CLI; and who the
CLI's own changes are recorded as."""

from __future__ import annotations

import os
import pwd

import click

from tablequeue import Actor, connect

from .completion import queue_names
from .options import db_options
from .output import emit


def cli_user() -> Actor:
    """The OS user running the CLI, by its uid's passwd entry (a container without one: the
    uid); never the USER or LOGNAME variables, which the caller chooses."""
    try:
        who = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        who = f"uid {os.getuid()}"
    return Actor(who=who, via="cli")


@click.command()
@click.option("--queue", "queue_name", shell_complete=queue_names, help="Only this queue's")
@click.option(
    "--limit",
    type=click.IntRange(1, 1000),
    default=50,
    show_default=True,
    help="Entries shown at most",
)
@click.option("--before-id", type=click.IntRange(1), help="Older than this entry (page back)")
@db_options
def audit(
    db_url: str, as_json: bool, queue_name: str | None, limit: int, before_id: int | None
) -> None:
    """Changes people and tools made (status changes, edits, deletes, cancels, purges, pauses,
    default statuses, schedules run), newest first: when, who, via what, the ids or predicate
    and how many messages. Kept 90 days unless the workers say otherwise."""
    with connect(db_url) as database:
        if queue_name is not None:
            database.queue(queue_name)  # an unknown queue is an error, not an empty list
        entries = database.audit_entries(queue=queue_name, before_id=before_id, limit=limit)
    emit(as_json, [entry.to_json() for entry in entries], empty="no changes recorded")
