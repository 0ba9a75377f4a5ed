"""Message commands: enqueue, list, show, set statuses, stats, purge, sweep and cancel."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Generator
from datetime import datetime, timedelta
from pathlib import Path
from stat import S_ISREG
from typing import Any, TypeVar

import click
import pydantic

from tablequeue import connect
from tablequeue.durations import parse_duration, point_in_time
from tablequeue.error_text import exception_line
from tablequeue.errors import InvalidInput
from tablequeue.models import NewMessage
from tablequeue.progress import progress_bar
from tablequeue.spec.dedupe import MODES

from . import progress, statuses
from .completion import queue_names
from .options import db_options, validation_line
from .output import emit


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


def _time(value: str | None, option: str) -> datetime | None:
    return None if value is None else point_in_time(value, option)


def _parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        at = (
            f"line {error.lineno}, column {error.colno}"
            if error.lineno > 1
            else f"column {error.colno}"
        )
        raise InvalidInput(f"invalid JSON {where}: {error.msg} at {at}") from None
    except RecursionError:
        raise InvalidInput(f"invalid JSON {where}: nested too deeply") from None
    except ValueError:  # Python's limit on the digits of an integer
        raise InvalidInput(
            f"invalid JSON {where}: a number has more than {sys.get_int_max_str_digits()} digits"
        ) from None


def _bodies(
    message: str | None, path: str | None, as_json: bool = True
) -> Generator[tuple[Any, str], None, None]:
    if (message is None) == (path is None):
        raise InvalidInput("give a JSON message or -f FILE.jsonl (one of them)")
    if message is not None:
        yield _parse_json(message, "message"), "message"
        return
    assert path is not None
    source, size = (sys.stdin.buffer, None) if path == "-" else _open(path)
    with source, progress.step(as_json, f"reading {path}", size, unit="bytes") as advance:
        number = 0
        for number, raw in enumerate(source, start=1):
            advance(len(raw))
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InvalidInput(
                    f"cannot read {path}: not UTF-8 text after line {number - 1} ({error.reason})"
                ) from None
            if line.strip():
                # Without its line break: a line cut short is at fault at its end, not on the
                # next line's first column.
                body = _parse_json(line.rstrip("\r\n"), f"on line {number} of {path}")
                yield body, f"line {number}"


def _open(path: str) -> tuple[Any, int | None]:
    """The file in binary (lines are decoded one by one), and its size when it has one."""
    try:
        file = Path(path).open("rb")  # noqa: SIM115 - closed by the caller's with
    except OSError as error:
        raise InvalidInput(f"cannot read {path}: {error.strerror}") from None
    with contextlib.suppress(OSError):
        stat = os.fstat(file.fileno())
        if S_ISREG(stat.st_mode):
            return file, stat.st_size
    return file, None


F = TypeVar("F", bound=Callable[..., Any])
_TIME_FORMS = "ISO 8601 with an offset, e.g. 2026-01-31T12:00Z, or a time ago: -1h, -7d"

_DELIVERY_OPTIONS = [
    click.option("--at", help="Not before this time (ISO 8601 with zone)."),
    click.option("--after", help="Not before this long from now (30s, 5m, 2h)."),
    click.option(
        "--priority", type=int, default=0, show_default=True, help="Higher is leased first."
    ),
    click.option("--expires-after", help="Expire if not leased within this long."),
    click.option(
        "--header",
        "headers",
        multiple=True,
        metavar="KEY=VALUE",
        help="A header for the handler (repeatable), e.g. --header trace=abc.",
    ),
]


def delivery_options(command: F) -> F:
    """--at, --after, --priority, --expires-after, --header: when and how a message is
    delivered (enqueue, publish)."""
    for option in reversed(_DELIVERY_OPTIONS):
        command = option(command)
    return command


@click.command()
@click.argument("queue_name", metavar="QUEUE", shell_complete=queue_names)
@click.argument("message", required=False)
@click.option("-f", "--file", "path", help="JSON Lines file of bodies ('-' for stdin).")
@click.option("--envelope", is_flag=True, help="Each line is {message, messageId, at, ...}.")
@click.option("--id", "message_id", help="Message identity (upserts an existing one).")
@click.option(
    "--tracking-id",
    help="A UUID of your choosing as the tracking id (default: a random one); refused when "
    "another message has it.",
)
@click.option(
    "--correlation-id",
    help="Your correlation id (many messages may share one): searchable, given to the handler.",
)
@click.option("--label", help="A short human name for the message, shown in the UI's lists.")
@delivery_options
@click.option("--status", help="Status instead of the queue's default.")
@statuses.new_status_option
@click.option(
    "--group-key",
    help="The message's ordered group (spec.groups): one key's messages run in id order.",
)
@click.option(
    "--dedupe",
    type=click.Choice(MODES),
    help="What a messageId that exists gets, instead of the queue's spec.dedupe: replace "
    "(a new version), keep (left as it is), window (left as it is within the window).",
)
@click.option(
    "--dedupe-window",
    metavar="DURATION",
    help="With --dedupe window: this call's window (e.g. 10m); default the queue's.",
)
@db_options
def enqueue(
    db_url: str,
    as_json: bool,
    queue_name: str,
    message: str | None,
    path: str | None,
    envelope: bool,
    message_id: str | None,
    tracking_id: str | None,
    correlation_id: str | None,
    label: str | None,
    at: str | None,
    after: str | None,
    priority: int,
    status: str | None,
    expires_after: str | None,
    headers: tuple[str, ...],
    new_status: bool,
    group_key: str | None,
    dedupe: str | None,
    dedupe_window: str | None,
) -> None:
    """Enqueue one JSON message, or one per line of a JSON Lines file. Each result's outcome:
    inserted, updated, discarded (an idempotent queue's unchanged body) or kept (left as it
    was by the dedupe mode)."""
    options: dict[str, Any] = {
        "group_key": group_key,
        "tracking_id": tracking_id,
        "correlation_id": correlation_id,
        "label": label,
        "at": _timestamp(at, "--at"),
        "after": _duration_seconds(after, "--after"),
        "priority": priority,
        "status": status,
        "expires_after": _duration_seconds(expires_after, "--expires-after"),
        "headers": _headers(headers),
    }
    options = {k: v for k, v in options.items() if v is not None and v != 0}
    batch: list[NewMessage] = []
    bodies = contextlib.closing(_bodies(message, path, as_json))  # ends the progress display
    with bodies as lines:
        for body, where in lines:
            try:
                if envelope:
                    batch.append(NewMessage.model_validate({**options, **body}))
                else:
                    batch.append(NewMessage(message=body, message_id=message_id, **options))
            except pydantic.ValidationError as error:
                problem = validation_line(error)
                raise InvalidInput(f"invalid message ({where}): {problem}") from None
            except TypeError:
                raise InvalidInput(f"invalid envelope ({where}): expected a JSON object") from None
    if message_id is not None and len(batch) > 1:
        raise InvalidInput("--id names one message; use --envelope with messageId per line")
    if tracking_id is not None and len(batch) > 1:
        raise InvalidInput(
            "--tracking-id names one message; use --envelope with trackingId per line"
        )
    with (
        connect(db_url) as database,
        progress.step(as_json or len(batch) < 2, f"enqueueing {len(batch):,} messages"),
    ):
        queue = database.queue(queue_name)
        statuses.check(queue, {m.status for m in batch}, new_status)
        results = queue.enqueue_many(batch, dedupe=dedupe, dedupe_window=dedupe_window)
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
    emit(as_json, data if len(data) != 1 else data[0], empty="no messages in the file")


def _headers(pairs: tuple[str, ...]) -> dict[str, str] | None:
    headers = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--header {pair!r}: use KEY=VALUE")
        headers[key] = value
    return headers or None


@click.command()
@click.argument("queue_name", metavar="QUEUE", shell_complete=queue_names)
@click.option("--status", help="Only this status.")
@click.option("--where", help='Predicate on the body, e.g. Product.Sku == "123".')
@click.option("--correlation-id", help="Only the messages given this correlation id.")
@click.option(
    "--limit",
    type=click.IntRange(1, 10_000),
    default=50,
    show_default=True,
    help="At most this many messages.",
)
@click.option("--after-id", type=int, help="Next page: the last id of the previous one.")
@click.option("--desc", is_flag=True, help="Newest first.")
@click.option(
    "--error-contains",
    help="Only messages whose last error contains this text (case-insensitive).",
)
@click.option("--created-after", help=f"Created at or after this time ({_TIME_FORMS}).")
@click.option("--created-before", help=f"Created before this time ({_TIME_FORMS}).")
@click.option("--updated-after", help=f"Last changed at or after this time ({_TIME_FORMS}).")
@click.option("--updated-before", help=f"Last changed before this time ({_TIME_FORMS}).")
@db_options
def messages(
    db_url: str,
    as_json: bool,
    queue_name: str,
    status: str | None,
    where: str | None,
    correlation_id: str | None,
    limit: int,
    after_id: int | None,
    desc: bool,
    error_contains: str | None,
    created_after: str | None,
    created_before: str | None,
    updated_after: str | None,
    updated_before: str | None,
) -> None:
    """List messages in id order, filtered by status, predicate, correlation id, error text and
    when they were created or last changed (every filter given must hold)."""
    with connect(db_url) as database, progress.step(as_json, "searching"):
        found = database.queue(queue_name).messages(
            status=status,
            where=where,
            correlation_id=correlation_id,
            limit=limit,
            after_id=after_id,
            order="desc" if desc else "asc",
            error_contains=error_contains,
            created_after=_time(created_after, "--created-after"),
            created_before=_time(created_before, "--created-before"),
            updated_after=_time(updated_after, "--updated-after"),
            updated_before=_time(updated_before, "--updated-before"),
        )
    emit(as_json, [m.to_json() for m in found], empty="no messages")


@click.command()
@click.argument("queue_name", metavar="QUEUE", shell_complete=queue_names)
@click.argument("message_id", metavar="ID", type=int)
@db_options
def show(db_url: str, as_json: bool, queue_name: str, message_id: int) -> None:
    """Show one message with everything stored about it, and its attempt history."""
    with connect(db_url) as database:
        queue = database.queue(queue_name)
        message = queue.get(message_id)
        attempts = [_with_exception_line(a.to_json()) for a in queue.attempts(message)]
    emit(as_json, message.to_json() | {"attemptHistory": attempts})


def _with_exception_line(attempt: dict[str, Any]) -> dict[str, Any]:
    """The attempt's error's exception line first (a traceback's last line), then the rest."""
    return {"exception": exception_line(attempt["error"])} | attempt


@click.command("job")
@click.argument("tracking_id")
@db_options
def job(db_url: str, as_json: bool, tracking_id: str) -> None:
    """What became of a message by its tracking id: its row while it has one, else its kept
    result (keepResultsFor); `source` says which."""
    with connect(db_url) as database:
        found = database.find_job(tracking_id).to_json()
    bar = progress_bar(found.get("progress"))
    if bar is not None:  # progress of the documented shape (tablequeue.progress.Progress)
        found["progressBar"] = bar.text_bar()
    emit(as_json, found)


@click.command("set-status")
@click.argument("queue_name", metavar="QUEUE", shell_complete=queue_names)
@click.argument("status")
@click.option("--id", "ids", type=int, multiple=True, help="A message id (repeatable).")
@click.option("--from", "from_status", help="Messages currently in this status.")
@click.option("--where", help="Messages whose body matches this predicate.")
@click.option("--force", is_flag=True, help="Also change Leased messages.")
@click.option("--dry-run", is_flag=True, help="Only count the messages it would change.")
@statuses.new_status_option
@db_options
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
    new_status: bool,
) -> None:
    """Set STATUS on messages chosen by --id, --from and/or --where."""
    verb = "counting" if dry_run else f"setting {status} on"
    with connect(db_url) as database, progress.step(as_json, f"{verb} messages"):
        queue = database.queue(queue_name)
        statuses.check(queue, [status], new_status)
        changed = queue.set_status(
            status,
            ids=list(ids) or None,
            from_status=from_status,
            where=where,
            force=force,
            dry_run=dry_run,
        )
    emit(as_json, {"changed": changed, "dryRun": dry_run})


@click.command()
@click.argument("queue_name", metavar="QUEUE", shell_complete=queue_names)
@db_options
def stats(db_url: str, as_json: bool, queue_name: str) -> None:
    """Counts per status, backlog, oldest due message and health."""
    with connect(db_url) as database, progress.step(as_json, "counting"):
        result = database.queue(queue_name).stats()
    emit(as_json, result.to_json())


@click.command()
@click.argument("queue_name", metavar="QUEUE", shell_complete=queue_names)
@click.option("--status", "statuses", multiple=True, help="Purge this status (repeatable).")
@click.option("--older-than", help="Only messages finished longer ago than this (e.g. 7d).")
@db_options
def purge(
    db_url: str, as_json: bool, queue_name: str, statuses: tuple[str, ...], older_than: str | None
) -> None:
    """Delete finished messages: by default Processed ones past keepProcessedFor."""
    seconds = _duration_seconds(older_than, "--older-than")
    age = None if seconds is None else timedelta(seconds=seconds)
    with connect(db_url) as database, progress.step(as_json, "deleting finished messages"):
        deleted = database.queue(queue_name).purge(list(statuses) or None, age)
    emit(as_json, {"deleted": deleted})


@click.command()
@click.argument("queue_name", metavar="QUEUE", shell_complete=queue_names)
@db_options
def sweep(db_url: str, as_json: bool, queue_name: str) -> None:
    """Apply the lease-expiry policy and expire messages past their expiry (workers do it too)."""
    with connect(db_url) as database, progress.step(as_json, "sweeping"):
        result = database.queue(queue_name).sweep()
    emit(as_json, result.__dict__)


@click.command()
@click.argument("queue_name", metavar="QUEUE", shell_complete=queue_names)
@click.argument("tracking_id")
@db_options
def cancel(db_url: str, as_json: bool, queue_name: str, tracking_id: str) -> None:
    """Cancel a message by its tracking id (a running handler is told to stop)."""
    with connect(db_url) as database:
        message = database.queue(queue_name).cancel(tracking_id)
    emit(as_json, message.to_json())
