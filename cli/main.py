"""The `tablequeue` command group: every command of the other modules, under one name."""

from __future__ import annotations

import click

from tablequeue import act_as
from tablequeue.pipeline.cli import pipeline

from . import audit, healthcheck, messages, processes, queues, schedules, topics, workers

SERVERS = {"worker", "api", "dev", "operator"}
"""Long-running processes: their changes are their callers' (API) or nobody's (housekeeping)."""


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tablequeue")
@click.pass_context
def main(context: click.Context) -> None:
    """Message queues that live in SQL tables."""
    if context.invoked_subcommand not in SERVERS:
        act_as(audit.cli_user())  # the changes this command makes go to the audit trail


for command in (
    queues.queue,
    messages.enqueue,
    topics.publish,
    messages.messages,
    messages.show,
    messages.set_status,
    messages.stats,
    messages.purge,
    messages.sweep,
    messages.cancel,
    messages.job,
    schedules.schedules,
    workers.workers,
    audit.audit,
    processes.worker,
    processes.api,
    processes.dev,
    processes.operator_,
    healthcheck.healthcheck,
    pipeline,
):
    main.add_command(command)
