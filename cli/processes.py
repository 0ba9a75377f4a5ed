"""The process commands: each parses its options and calls the entry point of its package.

The packages are imported when their command runs, so the admin verbs start quickly and need
none of uvicorn, kopf or the worker.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path

import click
import pydantic

from tablequeue.spec import MAX_REPLICAS, OPERATOR_MAX_REPLICAS
from tablequeue.worker_settings import WorkerSettings, env_name

from .model_options import model_options
from .options import db_option, fail, friendly_errors, validation_line


@click.command()
@model_options(
    WorkerSettings, env_name, metavars={"db": "URL", "listen_db": "URL"}, hidden={"vacuum_interval"}
)
@friendly_errors
def worker(**options: object) -> None:
    """Lease messages of QUEUE and hand them to a handler (options also from TABLEQUEUE_*)."""
    from tablequeue.worker.main import run

    # click has read the flags and the TABLEQUEUE_* variables; the model fills in the rest.
    given = {name: value for name, value in options.items() if value not in (None, "")}
    try:
        settings = WorkerSettings.model_validate(given)
    except pydantic.ValidationError as error:
        fail(f"invalid worker option: {validation_line(error)}")
    sys.exit(run(settings))


@click.command()
@click.option("--host", envvar="TABLEQUEUE_API_HOST", default="127.0.0.1", show_default=True)
@click.option(
    "--port",
    envvar="TABLEQUEUE_API_PORT",
    type=click.IntRange(1, 65535),
    default=8000,
    show_default=True,
)
@click.option(
    "--admin-token",
    envvar="TABLEQUEUE_API_ADMIN_TOKEN",
    help="Bearer token that may change things [env TABLEQUEUE_API_ADMIN_TOKEN]",
)
@click.option(
    "--read-token",
    envvar="TABLEQUEUE_API_READ_TOKEN",
    help="Bearer token that may only read [env TABLEQUEUE_API_READ_TOKEN]",
)
@db_option("Database URL [env TABLEQUEUE_DB]")
@friendly_errors
def api(db_url: str, host: str, port: int, admin_token: str | None, read_token: str | None) -> None:
    """Serve the HTTP API and the admin UI (OpenAPI at /docs)."""
    from tablequeue.api.auth import Auth
    from tablequeue.api.main import run

    run(db_url, host, port, Auth(admin_token=admin_token, read_token=read_token))


@click.command()
@click.option(
    "--folder",
    type=click.Path(file_okay=False),
    default=".tablequeue-dev",
    show_default=True,
    help="Where the SQLite database and worker logs go.",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@friendly_errors
def dev(folder: str, host: str, port: int) -> None:
    """Run everything on SQLite: example queues, workers, messages, API and admin UI."""
    from .dev import run

    run(Path(folder), host, port)


@click.command("operator")
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    envvar="TABLEQUEUE_NAMESPACES",
    help="Watch only these namespaces (repeatable) [default: all]",
)
@click.option(
    "--worker-image",
    envvar="TABLEQUEUE_WORKER_IMAGE",
    default=f"tablequeue/worker:{version('tablequeue')}",  # Dockerfile.worker's, the chart's
    show_default=True,
    help="Image of the worker sidecar when a Queue names none.",
)
@click.option(
    "--interval",
    envvar="TABLEQUEUE_OPERATOR_INTERVAL",
    type=click.FloatRange(0.5),
    default=10.0,
    show_default=True,
    help="Seconds between status updates and scaling.",
)
@click.option(
    "--metrics-port",
    envvar="TABLEQUEUE_METRICS_PORT",
    type=click.IntRange(1, 65535),
    default=9090,
    show_default=True,
)
@click.option(
    "--liveness-port",
    envvar="TABLEQUEUE_LIVENESS_PORT",
    type=click.IntRange(1, 65535),
    default=8080,
    show_default=True,
)
@click.option(
    "--max-replicas",
    envvar="TABLEQUEUE_OPERATOR_MAX_REPLICAS",
    type=click.IntRange(1, MAX_REPLICAS),
    default=OPERATOR_MAX_REPLICAS,
    show_default=True,
    help="The most worker replicas a Queue may ask for; more is Ready=False (TooManyReplicas).",
)
@click.option(
    "--allow-sqlite/--refuse-sqlite",
    envvar="TABLEQUEUE_OPERATOR_ALLOW_SQLITE",
    default=False,
    show_default=True,
    help="Serve Queues whose Secret names a sqlite:// URL: a file in the operator's own file "
    "system, which any tenant's Secret could choose (refused: Ready=False, SQLiteNotAllowed).",
)
@click.option(
    "--standalone/--peering",
    default=True,
    show_default=True,
    help="Peering lets several operator replicas take turns (needs kopf's peering CRD).",
)
@friendly_errors
def operator_(
    namespaces: tuple[str, ...],
    worker_image: str,
    interval: float,
    metrics_port: int,
    liveness_port: int,
    max_replicas: int,
    allow_sqlite: bool,
    standalone: bool,
) -> None:
    """Reconcile Queue resources: tables, default statuses, worker Deployments, scaling."""
    from tablequeue.operator.main import run
    from tablequeue.operator.state import Settings

    settings = Settings(
        worker_image=worker_image,
        interval=interval,
        max_replicas=max_replicas,
        allow_sqlite=allow_sqlite,
    )
    run(list(namespaces), settings, metrics_port, liveness_port, standalone)
