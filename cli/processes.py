"""The process commands: each parses its options and calls the entry point of its package.

The packages are imported when their command runs, so the admin verbs start quickly and need
none of uvicorn, kopf or the worker: those are extras (`pip install 'tablequeue[worker]'`, ...),
and a process command whose extra is missing says which one to install before it reads its
options (`ProcessCommand`). Each process's options are a settings model of the core (flags and
TABLEQUEUE_* variables both derive from it; a flag wins over its variable).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
import pydantic
from pydantic_settings import BaseSettings

from tablequeue.extras import MissingExtra, require
from tablequeue.settings import api as api_settings
from tablequeue.settings import operator as operator_settings
from tablequeue.settings.api import ApiSettings
from tablequeue.settings.operator import OperatorSettings
from tablequeue.settings.worker import WorkerSettings, env_name

from .completion import queue_names
from .model_options import model_options
from .options import fail, friendly_errors

S = TypeVar("S", bound=BaseSettings)


class ProcessCommand(click.Command):
    """A command that runs a process of an extra: without the extra's packages, one error line
    naming them and the `pip install` to run (exit 1), before the options are parsed (a missing
    --db is not the first thing to fix). `--help` works without the extra."""

    def __init__(self, *args: Any, extras: Sequence[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.extras = tuple(extras)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not set(args) & set(ctx.help_option_names):
            try:
                require(f"tablequeue {self.name}", *self.extras)
            except MissingExtra as error:
                fail(str(error))
        return super().parse_args(ctx, args)


def settings(
    model: type[S],
    names: Callable[[str], str | Sequence[str]],
    what: str,
    options: dict[str, Any],
    flags: Mapping[str, str] | None = None,
) -> S:
    """The process's settings from the options click read (flags, then variables); the model
    fills in the rest. A bad value is one error line naming the flag and its variables."""
    # An option not given arrives as None (or empty): the model's default stands.
    given = {name: value for name, value in options.items() if value not in (None, "", ())}
    try:
        return model.model_validate(given)
    except pydantic.ValidationError as error:
        fail(f"invalid {what} option: {option_line(model, names, error, flags)}")


def option_line(
    model: type[BaseSettings],
    names: Callable[[str], str | Sequence[str]],
    error: pydantic.ValidationError,
    flags: Mapping[str, str] | None = None,
) -> str:
    """`validation_line`, with each field named by its flag (`flags`' where the field's name is
    not its flag's) and variables."""
    problems = []
    for item in error.errors():
        field = str(item["loc"][0]) if item["loc"] else ""
        text = str(item["msg"]).removeprefix("Value error, ")
        if field in model.model_fields:
            variables = names(field)
            variables = [variables] if isinstance(variables, str) else list(variables)
            flag = (flags or {}).get(field, "--" + field.replace("_", "-")).split("/")[0]
            problems.append(f"{flag} ({' or '.join(variables)}): {text}")
        else:
            problems.append(text)
    return "; ".join(problems)


@click.command(cls=ProcessCommand, extras=("worker",))
@click.argument(
    "queue", metavar="QUEUE", required=False, envvar=env_name("queue"), shell_complete=queue_names
)
@click.option(
    "--queue",
    "queue_option",
    metavar="QUEUE",
    help="Deprecated: give QUEUE as the argument.",
)
@model_options(
    WorkerSettings,
    env_name,
    metavars={"db": "URL", "listen_db": "URL"},
    hidden={"vacuum_interval"},
    omit={"queue"},
)
@friendly_errors
def worker(queue: str | None, queue_option: str | None, **options: Any) -> None:
    """Lease messages of QUEUE and hand them to a handler (options also from TABLEQUEUE_*;
    QUEUE from TABLEQUEUE_QUEUE)."""
    from tablequeue.worker.main import run

    if queue_option is not None:
        click.echo("warning: --queue is deprecated: give the queue as the argument", err=True)
        if queue is not None and queue != queue_option:
            fail(f"two queues: {queue!r} and --queue {queue_option!r}; give one")
        queue = queue_option
    if queue is None:
        raise click.UsageError(f"Missing argument 'QUEUE'. Give it or set {env_name('queue')}.")
    options["queue"] = queue
    sys.exit(run(settings(WorkerSettings, env_name, "worker", options)))


API_FLAGS = {"databases": "--database"}
"""One database a flag: `--database billing=URL --database archive=URL`."""


@click.command(cls=ProcessCommand, extras=("api",))
@model_options(
    ApiSettings,
    api_settings.env_names,
    metavars={"db": "URL", "databases": "NAME=URL"},
    flags=API_FLAGS,
)
@friendly_errors
def api(**options: Any) -> None:
    """Serve the HTTP API and the admin UI (OpenAPI at /docs; options also from TABLEQUEUE_*)."""
    from tablequeue.api.main import run

    run(settings(ApiSettings, api_settings.env_names, "api", options, API_FLAGS))


@click.command(cls=ProcessCommand, extras=("api", "worker"))
@click.option(
    "--folder",
    type=click.Path(file_okay=False),
    default=".tablequeue-dev",
    show_default=True,
    help="Where the SQLite database and worker logs go.",
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address of the API and admin UI."
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=8000,
    show_default=True,
    help="Port of the API and admin UI.",
)
@friendly_errors
def dev(folder: str, host: str, port: int) -> None:
    """Run everything on SQLite: example queues, workers, messages, API and admin UI."""
    from .dev import run

    run(Path(folder), host, port)


OPERATOR_FLAGS = {
    "namespaces": "--namespace",
    "allow_sqlite": "--allow-sqlite/--refuse-sqlite",
    "standalone": "--standalone/--peering",
}
"""The operator's flags whose names are not their field's."""


@click.command("operator", cls=ProcessCommand, extras=("operator",))
@model_options(
    OperatorSettings,
    operator_settings.env_names,
    metavars={"namespaces": "NAMESPACE", "worker_image": "IMAGE", "archive_image": "IMAGE"},
    flags=OPERATOR_FLAGS,
)
@friendly_errors
def operator_(**options: Any) -> None:
    """Reconcile Queue resources: tables, default statuses, worker Deployments, scaling."""
    from tablequeue.operator.main import run

    run(
        settings(OperatorSettings, operator_settings.env_names, "operator", options, OPERATOR_FLAGS)
    )
