"""`tablequeue queue ...`: create, list and delete queues; pause and resume them."""

from __future__ import annotations

import warnings
from typing import Any

import click

from tablequeue import FlowState, connect
from tablequeue.errors import QueueSpecWarning
from tablequeue.spec import load_queue_file

from . import progress, statuses
from .completion import queue_names
from .options import db_options
from .output import emit


@click.group()
def queue() -> None:
    """Create, list and delete queues."""


@queue.command("apply")
@click.option(
    "-f",
    "--file",
    "path",
    required=True,
    type=click.Path(dir_okay=False),
    help="YAML file of Queue resources (several separated by ---).",
)
@db_options
def queue_apply(db_url: str, as_json: bool, path: str) -> None:
    """Create or migrate the queues of a YAML file (the Queue resources you kubectl apply)."""
    resources = load_queue_file(path)
    with (
        connect(db_url) as database,
        progress.step(as_json, "applying (indexes may take a while)"),
        warnings.catch_warnings(record=True, action="always", category=QueueSpecWarning) as warned,
    ):
        results = [(r.name, r.table, database.apply(r)) for r in resources]
    for warning in warned:
        if issubclass(warning.category, QueueSpecWarning):
            click.echo(f"warning: {warning.message}", err=True)
    emit(
        as_json,
        [{"queue": n, "table": t, "result": r} for n, t, r in results],
        empty=f"no Queue resource in {path}",
    )


@queue.command("list")
@db_options
def queue_list(db_url: str, as_json: bool) -> None:
    """List the queues of the database."""
    with connect(db_url) as database:
        rows = database.queues()
        flows = database.flow_states()
    data = [
        {k: row[k] for k in ("name", "table_name", "category", "default_status")}
        | _flow_fields(flows.get(row["name"]))
        for row in rows
    ]
    emit(as_json, data, empty="no queues: create one with `tablequeue queue apply -f FILE`")


def _flow_fields(state: FlowState | None) -> dict[str, Any]:
    paused_at = state.paused_at if state is not None else None
    limit = None
    if state is not None and state.messages_per_second is not None:
        limit = {"messagesPerSecond": state.messages_per_second, "burst": state.burst}
    return {
        "paused": paused_at is not None,
        "pausedAt": paused_at.isoformat() if paused_at else None,
        "rateLimit": limit,
        "globalConcurrency": state.max_leased if state is not None else None,
    }


@queue.command("delete")
@click.argument("name", shell_complete=queue_names)
@click.option("--drop-table", is_flag=True, help="Also drop the table and its messages.")
@db_options
def queue_delete(db_url: str, as_json: bool, name: str, drop_table: bool) -> None:
    """Forget a queue; its table stays unless --drop-table."""
    with connect(db_url) as database:
        database.delete_queue(name, drop_table=drop_table)
    emit(as_json, {"queue": name, "tableDropped": drop_table})


@queue.command("default-status")
@click.argument("name", shell_complete=queue_names)
@click.argument("status")
@statuses.new_status_option
@db_options
def queue_default_status(
    db_url: str, as_json: bool, name: str, status: str, new_status: bool
) -> None:
    """Set the status new messages get (Pending, or e.g. Paused --new-status to hold them)."""
    with connect(db_url) as database:
        statuses.check(database.queue(name), [status], new_status)
        database.set_default_status(name, status)
    emit(as_json, {"queue": name, "defaultStatus": status})


@queue.command("pause")
@click.argument("name", shell_complete=queue_names)
@db_options
def queue_pause(db_url: str, as_json: bool, name: str) -> None:
    """Stop workers leasing from a queue (enqueue still works; leased messages finish)."""
    with connect(db_url) as database:
        state = database.pause(name)
    emit(as_json, {"queue": name} | _flow_fields(state))


@queue.command("resume")
@click.argument("name", shell_complete=queue_names)
@db_options
def queue_resume(db_url: str, as_json: bool, name: str) -> None:
    """Let workers lease from a paused queue again (within their longest poll delay)."""
    with connect(db_url) as database:
        state = database.resume(name)
    emit(as_json, {"queue": name} | _flow_fields(state))
