"""The `tablequeue` group holds every command, however its modules split them."""

from __future__ import annotations

import click
from click.testing import CliRunner

from tablequeue.cli import main


def test_every_command_is_in_the_group() -> None:
    assert sorted(main.list_commands(click.Context(main))) == [
        "api",
        "audit",
        "cancel",
        "dev",
        "enqueue",
        "healthcheck",
        "job",
        "messages",
        "operator",
        "pipeline",
        "publish",
        "purge",
        "queue",
        "schedules",
        "set-status",
        "show",
        "stats",
        "sweep",
        "topics",
        "worker",
        "workers",
    ]


def test_the_pipeline_jobs_are_tablequeue_pipeline_verbs() -> None:
    result = CliRunner().invoke(main, ["pipeline", "--help"])
    assert result.exit_code == 0, result.output
    commands = result.output.split("Commands:")[1].split()
    assert {"enqueue", "archive", "report"} <= set(commands)
