"""The `tablequeue` command line: mistakes print one line on stderr and exit 1."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import click
import pydantic

from . import connect
from .errors import InvalidInput, TableQueueError
from .models import Message, NewMessage
from .spec import load_queue_file, parse_duration

F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def _validation_line(error: pydantic.ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"])
        text = str(item["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {text}" if where else text)
    return "; ".join(problems)


def _friendly_errors(function: F) -> F:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except TableQueueError as error:
            _fail(str(error))
        except pydantic.ValidationError as error:
            _fail(f"invalid message: {_validation_line(error)}")
        except BrokenPipeError:
            sys.exit(0)

    return wrapper  # type: ignore[return-value]


def _db_options(function: F) -> F:
    function = click.option(
        "--db",
        "db_url",
        envvar="TABLEQUEUE_DB",
        required=True,
        metavar="URL",
        help="Database URL, e.g. sqlite:///queues.db or postgresql://user:pw@host/db "
        "[env TABLEQUEUE_DB]",
    )(function)
    function = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")(
        function
    )
    return _friendly_errors(function)


def _emit(as_json: bool, data: Any, text: str) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, default=str) if as_json else text)


def _duration_seconds(value: str | None, option: str) -> float | None:
    if value is None:
        return None
    try:
        parsed = parse_duration(value)
    except ValueError as error:
        raise InvalidInput(f"{option}: {error}") from None
    if parsed is None:
        raise InvalidInput(f"{option}: 'forever' is not a time")
    return parsed.total_seconds()


def _timestamp(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(
            f"{option}: invalid time {value!r}: use ISO 8601 with a zone, e.g. 2026-01-31T12:00Z"
        ) from None
    if parsed.tzinfo is None:
        raise InvalidInput(f"{option}: time {value!r} needs a zone, e.g. 2026-01-31T12:00Z")
    return parsed


def _parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidInput(f"invalid JSON {where}: {error.msg} at column {error.colno}") from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tablequeue")
def main() -> None:
    """Message queues that live in SQL tables."""


# --- queues ----------------------------------------------------------------------------------


@main.group()
def queue() -> None:
    """Create, list and delete queues."""


@queue.command("apply")
@click.option("-f", "--file", "path", required=True, type=click.Path(dir_okay=False))
@_db_options
def queue_apply(db_url: str, as_json: bool, path: str) -> None:
    """Create or migrate the queues of a YAML file (the Queue resources you kubectl apply)."""
    resources = load_queue_file(path)
    with connect(db_url) as database:
        results = [(r.name, r.table, database.apply(r)) for r in resources]
    _emit(
        as_json,
        [{"queue": n, "table": t, "result": r} for n, t, r in results],
        "\n".join(f"queue/{n} {r} (table {t})" for n, t, r in results),
    )


@queue.command("list")
@_db_options
def queue_list(db_url: str, as_json: bool) -> None:
    """List the queues of the database."""
    with connect(db_url) as database:
        rows = database.queues()
    data = [
        {k: row[k] for k in ("name", "table_name", "category", "default_status")} for row in rows
    ]
    lines = [f"{'NAME':30} {'TABLE':30} {'CATEGORY':20} DEFAULT STATUS"]
    lines += [
        f"{r['name']:30} {r['table_name']:30} {r['category']:20} {r['default_status']}"
        for r in data
    ]
    _emit(as_json, data, "\n".join(lines))


@queue.command("delete")
@click.argument("name")
@click.option("--drop-table", is_flag=True, help="Also drop the table and its messages.")
@_db_options
def queue_delete(db_url: str, as_json: bool, name: str, drop_table: bool) -> None:
    """Forget a queue; its table stays unless --drop-table."""
    with connect(db_url) as database:
        database.delete_queue(name, drop_table=drop_table)
    _emit(as_json, {"queue": name, "tableDropped": drop_table}, f"queue/{name} deleted")


@queue.command("default-status")
@click.argument("name")
@click.argument("status")
@_db_options
def queue_default_status(db_url: str, as_json: bool, name: str, status: str) -> None:
    """Set the status new messages get (Pending, or e.g. Paused to hold them)."""
    with connect(db_url) as database:
        database.set_default_status(name, status)
    _emit(as_json, {"queue": name, "defaultStatus": status}, f"queue/{name} default {status}")


# --- messages ---------------------------------------------------------------------------------


def _bodies(message: str | None, path: str | None) -> Iterator[tuple[Any, str]]:
    if (message is None) == (path is None):
        raise InvalidInput("give a JSON message or -f FILE.jsonl (one of them)")
    if message is not None:
        yield _parse_json(message, "message"), "message"
        return
    assert path is not None
    source = sys.stdin if path == "-" else _open(path)
    with source:
        for number, line in enumerate(source, start=1):
            if line.strip():
                yield _parse_json(line, f"on line {number} of {path}"), f"line {number}"


def _open(path: str) -> Any:
    try:
        return Path(path).open(encoding="utf-8")
    except OSError as error:
        raise InvalidInput(f"cannot read {path}: {error.strerror}") from None


@main.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("message", required=False)
@click.option("-f", "--file", "path", help="JSON Lines file of bodies ('-' for stdin).")
@click.option("--envelope", is_flag=True, help="Each line is {message, messageId, at, ...}.")
@click.option("--id", "message_id", help="Message identity (upserts an existing one).")
@click.option("--at", help="Not before this time (ISO 8601 with zone).")
@click.option("--after", help="Not before this long from now (30s, 5m, 2h).")
@click.option("--priority", type=int, default=0, show_default=True)
@click.option("--status", help="Status instead of the queue's default.")
@click.option("--expires-after", help="Expire if not leased within this long.")
@click.option("--header", "headers", multiple=True, metavar="KEY=VALUE")
@_db_options
def enqueue(
    db_url: str,
    as_json: bool,
    queue_name: str,
    message: str | None,
    path: str | None,
    envelope: bool,
    message_id: str | None,
    at: str | None,
    after: str | None,
    priority: int,
    status: str | None,
    expires_after: str | None,
    headers: tuple[str, ...],
) -> None:
    """Enqueue one JSON message, or one per line of a JSON Lines file."""
    options: dict[str, Any] = {
        "at": _timestamp(at, "--at"),
        "after": _duration_seconds(after, "--after"),
        "priority": priority,
        "status": status,
        "expires_after": _duration_seconds(expires_after, "--expires-after"),
        "headers": _headers(headers),
    }
    options = {k: v for k, v in options.items() if v is not None and v != 0}
    batch: list[NewMessage] = []
    for body, where in _bodies(message, path):
        try:
            if envelope:
                batch.append(NewMessage.model_validate({**options, **body}))
            else:
                batch.append(NewMessage(message=body, message_id=message_id, **options))
        except pydantic.ValidationError as error:
            raise InvalidInput(f"invalid message ({where}): {_validation_line(error)}") from None
        except TypeError:
            raise InvalidInput(f"invalid envelope ({where}): expected a JSON object") from None
    if message_id is not None and len(batch) > 1:
        raise InvalidInput("--id names one message; use --envelope with messageId per line")
    with connect(db_url) as database:
        results = database.queue(queue_name).enqueue_many(batch)
    data = [
        {
            "id": r.id,
            "trackingId": r.tracking_id and str(r.tracking_id),
            "messageId": r.message_id,
            "outcome": r.outcome,
            "status": r.status,
            "version": r.version,
        }
        for r in results
    ]
    if len(results) == 1:
        r = results[0]
        text = f"{r.outcome} id={r.id} status={r.status} trackingId={r.tracking_id}"
    else:
        counts = {o: sum(1 for r in results if r.outcome == o) for o in ("inserted", "updated")}
        discarded = len(results) - sum(counts.values())
        text = f"{len(results)} messages: {counts['inserted']} inserted, "
        text += f"{counts['updated']} updated, {discarded} discarded"
    _emit(as_json, data if len(data) != 1 else data[0], text)


def _headers(pairs: tuple[str, ...]) -> dict[str, str] | None:
    headers = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--header {pair!r}: use KEY=VALUE")
        headers[key] = value
    return headers or None


def _short(message: Message) -> str:
    body = json.dumps(message.message, ensure_ascii=False)
    body = body if len(body) <= 60 else body[:57] + "..."
    return (
        f"{message.id:<10} {message.status:<10} {message.attempts:<8} "
        f"{(message.message_id or '-')[:20]:<20} {message.process_after:%Y-%m-%d %H:%M:%S}  {body}"
    )


@main.command()
@click.argument("queue_name", metavar="QUEUE")
@click.option("--status", help="Only this status.")
@click.option("--where", help='Predicate on the body, e.g. Product.Sku == "123".')
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@click.option("--after-id", type=int, help="Next page: the last id of the previous one.")
@click.option("--desc", is_flag=True, help="Newest first.")
@_db_options
def messages(
    db_url: str,
    as_json: bool,
    queue_name: str,
    status: str | None,
    where: str | None,
    limit: int,
    after_id: int | None,
    desc: bool,
) -> None:
    """List messages, filtered by status and predicate, in id order."""
    with connect(db_url) as database:
        found = database.queue(queue_name).messages(
            status=status,
            where=where,
            limit=limit,
            after_id=after_id,
            order="desc" if desc else "asc",
        )
    header = (
        f"{'ID':<10} {'STATUS':<10} {'ATTEMPTS':<8} {'MESSAGE ID':<20} {'PROCESS AFTER':<20} BODY"
    )
    _emit(as_json, [m.to_json() for m in found], "\n".join([header, *map(_short, found)]))


@main.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("message_id", metavar="ID", type=int)
@_db_options
def show(db_url: str, as_json: bool, queue_name: str, message_id: int) -> None:
    """Show one message with everything stored about it."""
    with connect(db_url) as database:
        found = database.queue(queue_name).get(message_id).to_json()
    _emit(as_json, found, json.dumps(found, indent=2, ensure_ascii=False, default=str))


@main.command("set-status")
@click.argument("queue_name", metavar="QUEUE")
@click.argument("status")
@click.option("--id", "ids", type=int, multiple=True, help="A message id (repeatable).")
@click.option("--from", "from_status", help="Messages currently in this status.")
@click.option("--where", help="Messages whose body matches this predicate.")
@click.option("--force", is_flag=True, help="Also change Leased messages.")
@click.option("--dry-run", is_flag=True, help="Only count the messages it would change.")
@_db_options
def set_status(
    db_url: str,
    as_json: bool,
    queue_name: str,
    status: str,
    ids: tuple[int, ...],
    from_status: str | None,
    where: str | None,
    force: bool,
    dry_run: bool,
) -> None:
    """Set STATUS on messages chosen by --id, --from and/or --where."""
    with connect(db_url) as database:
        changed = database.queue(queue_name).set_status(
            status,
            ids=list(ids) or None,
            from_status=from_status,
            where=where,
            force=force,
            dry_run=dry_run,
        )
    verb = "would change" if dry_run else "changed"
    _emit(as_json, {"changed": changed, "dryRun": dry_run}, f"{verb} {changed} message(s)")


@main.command()
@click.argument("queue_name", metavar="QUEUE")
@_db_options
def stats(db_url: str, as_json: bool, queue_name: str) -> None:
    """Counts per status, backlog, oldest due message and health."""
    with connect(db_url) as database:
        result = database.queue(queue_name).stats()
    lines = [f"{status:<12} {count}" for status, count in sorted(result.counts.items())]
    lines += [
        f"backlog      {result.backlog}",
        f"oldest due   {result.oldest_pending_seconds:.1f}s",
        f"health       {result.health}"
        + (f" ({'; '.join(result.health_reasons)})" if result.health_reasons else ""),
    ]
    _emit(as_json, result.to_json(), "\n".join(lines))


@main.command()
@click.argument("queue_name", metavar="QUEUE")
@click.option("--status", "statuses", multiple=True, help="Purge this status (repeatable).")
@click.option("--older-than", help="Only messages finished longer ago than this (e.g. 7d).")
@_db_options
def purge(
    db_url: str, as_json: bool, queue_name: str, statuses: tuple[str, ...], older_than: str | None
) -> None:
    """Delete finished messages: by default Processed ones past keepProcessedFor."""
    seconds = _duration_seconds(older_than, "--older-than")
    age = None if seconds is None else timedelta(seconds=seconds)
    with connect(db_url) as database:
        deleted = database.queue(queue_name).purge(list(statuses) or None, age)
    _emit(as_json, {"deleted": deleted}, f"deleted {deleted} message(s)")


@main.command()
@click.argument("queue_name", metavar="QUEUE")
@_db_options
def sweep(db_url: str, as_json: bool, queue_name: str) -> None:
    """Apply the lease-expiry policy and expire messages past their expiry (workers do it too)."""
    with connect(db_url) as database:
        result = database.queue(queue_name).sweep()
    data = result.__dict__
    _emit(as_json, data, ", ".join(f"{k} {v}" for k, v in data.items()))


@main.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("tracking_id")
@_db_options
def cancel(db_url: str, as_json: bool, queue_name: str, tracking_id: str) -> None:
    """Cancel a message by its tracking id (a running handler is told to stop)."""
    with connect(db_url) as database:
        message = database.queue(queue_name).cancel(tracking_id)
    _emit(as_json, message.to_json(), f"cancelled message {message.id}")


def _env(name: str) -> str:
    return f"TABLEQUEUE_{name}"


@main.command()
@click.option("--queue", "queue_name", envvar=_env("QUEUE"), required=True, help="Queue name.")
@click.option(
    "--handler",
    envvar=_env("HANDLER"),
    required=True,
    help="http://127.0.0.1:PORT/PATH (POST each message) or python:package.module:function.",
)
@click.option(
    "--handler-timeout",
    envvar=_env("HANDLER_TIMEOUT"),
    type=float,
    default=30.0,
    show_default=True,
    help="HTTP handler: seconds to wait for an answer.",
)
@click.option("--batch-size", envvar=_env("BATCH_SIZE"), type=click.IntRange(1, 10_000))
@click.option("--concurrency", envvar=_env("CONCURRENCY"), type=click.IntRange(1, 10_000))
@click.option("--lease-seconds", envvar=_env("LEASE_SECONDS"), type=click.FloatRange(0.1))
@click.option(
    "--execution-timeout",
    envvar=_env("EXECUTION_TIMEOUT"),
    type=click.FloatRange(0),
    help="Cancel a handler after this many seconds (0: no limit).",
)
@click.option("--poll-min", envvar=_env("POLL_MIN"), type=click.FloatRange(0.001))
@click.option("--poll-max", envvar=_env("POLL_MAX"), type=click.FloatRange(0.001))
@click.option("--grace-period", envvar=_env("GRACE_PERIOD"), type=click.FloatRange(0))
@click.option(
    "--sweep-interval",
    envvar=_env("SWEEP_INTERVAL"),
    type=click.FloatRange(0.1),
    default=30.0,
    show_default=True,
)
@click.option(
    "--listen/--no-listen",
    envvar=_env("LISTEN"),
    default=True,
    show_default=True,
    help="PostgreSQL: wake on NOTIFY instead of waiting for the next poll.",
)
@click.option("--host", envvar=_env("HOST"), default="0.0.0.0", show_default=True)
@click.option(
    "--port",
    envvar=_env("PORT"),
    type=click.IntRange(0, 65535),
    default=9090,
    show_default=True,
    help="Port of /livez, /readyz and /metrics.",
)
@click.option("--owner", envvar=_env("OWNER"), help="Lease owner name [default: host-pid-random]")
@click.option("--exit-when-idle", is_flag=True, help="Exit once nothing is due or running.")
@click.option(
    "--log-level",
    envvar=_env("LOG_LEVEL"),
    default="INFO",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
)
@click.option(
    "--db",
    "db_url",
    envvar="TABLEQUEUE_DB",
    required=True,
    metavar="URL",
    help="Database URL [env TABLEQUEUE_DB]",
)
@_friendly_errors
def worker(db_url: str, queue_name: str, log_level: str, owner: str | None, **options: Any) -> None:
    """Lease messages of QUEUE and hand them to a handler (options also from TABLEQUEUE_*)."""
    from tablequeue.worker import WorkerConfig
    from tablequeue.worker.main import run

    config = WorkerConfig(queue=queue_name, **options)
    if owner:
        config.owner = owner
    sys.exit(run(config, db_url, log_level))


@main.command()
@click.option("--host", envvar=_env("API_HOST"), default="127.0.0.1", show_default=True)
@click.option(
    "--port",
    envvar=_env("API_PORT"),
    type=click.IntRange(1, 65535),
    default=8000,
    show_default=True,
)
@click.option(
    "--admin-token",
    envvar=_env("API_ADMIN_TOKEN"),
    help="Bearer token that may change things [env TABLEQUEUE_API_ADMIN_TOKEN]",
)
@click.option(
    "--read-token",
    envvar=_env("API_READ_TOKEN"),
    help="Bearer token that may only read [env TABLEQUEUE_API_READ_TOKEN]",
)
@click.option(
    "--db",
    "db_url",
    envvar="TABLEQUEUE_DB",
    required=True,
    metavar="URL",
    help="Database URL [env TABLEQUEUE_DB]",
)
@_friendly_errors
def api(db_url: str, host: str, port: int, admin_token: str | None, read_token: str | None) -> None:
    """Serve the HTTP API and the admin UI (OpenAPI at /docs)."""
    from tablequeue.api.auth import Auth
    from tablequeue.api.main import run

    run(db_url, host, port, Auth(admin_token=admin_token, read_token=read_token))


@main.command()
@click.option(
    "--folder",
    type=click.Path(file_okay=False),
    default=".tablequeue-dev",
    show_default=True,
    help="Where the SQLite database and worker logs go.",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@_friendly_errors
def dev(folder: str, host: str, port: int) -> None:
    """Run everything on SQLite: example queues, workers, messages, API and admin UI."""
    from tablequeue.api.dev import run

    run(Path(folder), host, port)


@main.command("operator")
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    envvar=_env("NAMESPACES"),
    help="Watch only these namespaces (repeatable) [default: all]",
)
@click.option(
    "--worker-image",
    envvar=_env("WORKER_IMAGE"),
    default="tablequeue/worker:latest",
    show_default=True,
    help="Image of the worker sidecar when a Queue names none.",
)
@click.option(
    "--interval",
    envvar=_env("OPERATOR_INTERVAL"),
    type=click.FloatRange(0.5),
    default=10.0,
    show_default=True,
    help="Seconds between status updates and scaling.",
)
@click.option(
    "--metrics-port",
    envvar=_env("METRICS_PORT"),
    type=click.IntRange(1, 65535),
    default=9090,
    show_default=True,
)
@click.option(
    "--liveness-port",
    envvar=_env("LIVENESS_PORT"),
    type=click.IntRange(1, 65535),
    default=8080,
    show_default=True,
)
@click.option(
    "--standalone/--peering",
    default=True,
    show_default=True,
    help="Peering lets several operator replicas take turns (needs kopf's peering CRD).",
)
@_friendly_errors
def operator_(
    namespaces: tuple[str, ...],
    worker_image: str,
    interval: float,
    metrics_port: int,
    liveness_port: int,
    standalone: bool,
) -> None:
    """Reconcile Queue resources: tables, default statuses, worker Deployments, scaling."""
    from tablequeue.operator.main import run

    run(list(namespaces), worker_image, interval, metrics_port, liveness_port, standalone)
