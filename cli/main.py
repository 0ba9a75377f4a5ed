"""The `tablequeue` command group: every command of the other modules, under one name."""

from __future__ import annotations

import click

from tablequeue.pipeline.cli import pipeline

from . import healthcheck, messages, processes, queues, schedules, topics, workers


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tablequeue")
def main() -> None:
    """Message queues that live in SQL tables."""


for command in (
    queues.queue,
    messages.enqueue,
    topics.publish,
    topics.topics,
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
    processes.worker,
    processes.api,
    processes.dev,
    processes.operator_,
    healthcheck.healthcheck,
    pipeline,
):
    main.add_command(command)
