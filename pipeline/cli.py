"""`tablequeue pipeline enqueue|archive|report`: the pipeline's jobs as click commands.

Spark is imported when a command runs, not when the `tablequeue` command loads: the pipeline
is an extra (`pip install 'tablequeue[pipeline]'`).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tablequeue.durations import parse_duration
from tablequeue.errors import TableQueueError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

F = TypeVar("F", bound=Callable[..., Any])
FORMATS_BY_SUFFIX = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json"}


def _pairs(values: Sequence[str], what: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{value!r}: expected KEY=VALUE", param_hint=what)
        pairs[key] = rest
    return pairs


def _columns(values: Sequence[str]) -> tuple[str, ...]:
    """`--body a,b --body c` -> (a, b, c)."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def spark_options(function: F) -> F:
    """`--db`, `--master`, `--conf` and `--json`, with one-line errors."""
    function = click.option(
        "--conf", "confs", multiple=True, metavar="KEY=VALUE", help="Spark configuration."
    )(function)
    function = click.option(
        "--master", metavar="URL", help="Spark master (default local[*]; k8s://https://...)."
    )(function)
    function = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")(
        function
    )
    function = click.option(
        "--db",
        "db_url",
        envvar="TABLEQUEUE_DB",
        required=True,
        metavar="URL",
        help="Database URL of the queues [env TABLEQUEUE_DB].",
    )(function)
    return function


def _session(master: str | None, confs: Sequence[str]) -> SparkSession:
    from .spark import session

    return session(master, _pairs(confs, "--conf"))


def _needs_extra() -> None:
    """One clear line, not a traceback, when the pipeline extra is not installed."""
    try:
        import matplotlib  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as error:
        _fail(f"the pipeline needs its extra: pip install 'tablequeue[pipeline]' ({error})")


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def _tell(line: str) -> None:
    click.echo(line, err=True)


def _run(job: Callable[[], Any]) -> Any:
    try:
        return job()
    except (TableQueueError, ValueError) as error:
        _fail(str(error))


@click.group()
def pipeline() -> None:
    """Bulk jobs on Spark: enqueue data sets, archive finished messages, latency reports."""


@pipeline.command()
@click.argument("queue")
@click.argument("source")
@click.option(
    "--format",
    "source_format",
    help="parquet, csv, json (lines), jdbc or any Spark format; default from the suffix.",
)
@click.option("--table", help="For --format jdbc: the table (or a subquery) to read.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", help="Reader option.")
@click.option("--body", "body", multiple=True, help="Columns of the body (default: all).")
@click.option("--json-column", help="A column holding the whole body as JSON text.")
@click.option("--id-column", help="The messageId column (upserts; empty ids are rejected).")
@click.option("--schedule-column", help="A time column: not processed before it.")
@click.option("--header-column", "headers", multiple=True, help="Columns for the headers.")
@click.option("--priority-column", help="A column with the priority.")
@click.option("--correlation-column", help="A column with your correlation id (empty: none).")
@click.option("--label-column", help="A column with a short human label (empty: none).")
@click.option("--priority", type=int, default=0, show_default=True, help="Higher is leased first.")
@click.option("--status", help="Status instead of the queue's default.")
@click.option(
    "--new-status",
    is_flag=True,
    help="The --status is new on purpose: set it though it is neither a built-in status, nor "
    "the queue's default, nor held by a message of the queue.",
)
@click.option("--rejects", help="Where rejected rows go (JSON lines with the reason).")
@click.option(
    "--batch-size",
    type=click.IntRange(1, 10_000),
    default=1000,
    show_default=True,
    help="Rows per enqueue transaction on each partition.",
)
@click.option(
    "--partitions",
    type=click.IntRange(1),
    help="Partitions that write, one connection each (default: the source's partitions).",
)
@spark_options
def enqueue(
    queue: str,
    source: str,
    source_format: str | None,
    table: str | None,
    options: tuple[str, ...],
    body: tuple[str, ...],
    json_column: str | None,
    id_column: str | None,
    schedule_column: str | None,
    headers: tuple[str, ...],
    priority_column: str | None,
    correlation_column: str | None,
    label_column: str | None,
    priority: int,
    status: str | None,
    new_status: bool,
    rejects: str | None,
    batch_size: int,
    partitions: int | None,
    db_url: str,
    as_json: bool,
    master: str | None,
    confs: tuple[str, ...],
) -> None:
    """Enqueue every row of SOURCE (a path, or a database URL with --format jdbc) into QUEUE."""
    _needs_extra()
    from .enqueue import enqueue_frame
    from .messages import MessageColumns
    from .sources import read_source

    columns = MessageColumns(
        body_columns=_columns(body),
        json_column=json_column,
        id_column=id_column,
        schedule_column=schedule_column,
        header_columns=_columns(headers),
        priority_column=priority_column,
        priority=priority,
        status=status,
        correlation_column=correlation_column,
        label_column=label_column,
    )
    chosen = source_format or FORMATS_BY_SUFFIX.get(Path(source.rstrip("/")).suffix, "parquet")
    spark = _session(master, confs)
    result = _run(
        lambda: enqueue_frame(
            spark,
            read_source(spark, chosen, source, table=table, options=_pairs(options, "--option")),
            db_url,
            queue,
            columns,
            rejects_path=rejects,
            batch_size=batch_size,
            partitions=partitions,
            tell=_tell,
            new_status=new_status,
        )
    )
    if as_json:
        click.echo(json.dumps(result.to_json()))
        return
    click.echo(
        f"{queue}: inserted {result.inserted:,}, updated {result.updated:,}, "
        f"unchanged {result.unchanged:,}, rejected {result.rejected:,} "
        f"in {result.seconds:.1f} s"
    )
    if result.rejects_path:
        click.echo(f"rejected rows and their reasons: {result.rejects_path}")
    if not result.idempotent:
        click.echo(f"note: {queue} is not idempotent: a re-run updates every message with an id")


@pipeline.command()
@click.argument("queues", nargs=-1)
@click.option("--to", "root", required=True, help="Archive root (path, hdfs://, s3a://).")
@click.option("--older-than", default="7d", show_default=True, help="Retention, e.g. 30d.")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    help="Statuses to archive (default Processed, Error, Cancelled, Expired).",
)
@click.option(
    "--read-partitions",
    type=click.IntRange(1),
    help="JDBC reads by id range, one connection each (default: Spark's parallelism).",
)
@click.option(
    "--delete-batch",
    type=click.IntRange(1, 10_000),
    default=1000,
    show_default=True,
    help="Messages deleted per transaction once archived.",
)
@spark_options
def archive(
    queues: tuple[str, ...],
    root: str,
    older_than: str,
    statuses: tuple[str, ...],
    read_partitions: int | None,
    delete_batch: int,
    db_url: str,
    as_json: bool,
    master: str | None,
    confs: tuple[str, ...],
) -> None:
    """Move finished messages of QUEUES (default: all) older than the retention to Parquet."""
    _needs_extra()
    from .archive import DEFAULT_STATUSES, archive_queue

    retention = _run(lambda: parse_duration(older_than))
    if retention is None:
        _fail("--older-than forever archives nothing")
    names = queues or _all_queues(db_url)
    spark = _session(master, confs)
    job = functools.partial(
        archive_queue,
        spark,
        db_url,
        root=root,
        older_than=retention,
        statuses=statuses or DEFAULT_STATUSES,
        read_partitions=read_partitions,
        delete_batch=delete_batch,
        tell=_tell,
    )
    results = [_run(functools.partial(job, queue_name=name)) for name in names]
    if as_json:
        click.echo(json.dumps([result.to_json() for result in results]))
        return
    for result in results:
        recovered = (
            f" (finished {len(result.recovered_runs)} interrupted run(s), "
            f"{result.recovered_deleted:,} deleted)"
            if result.recovered_runs
            else ""
        )
        click.echo(
            f"{result.queue}: archived {result.archived:,}, deleted {result.deleted:,} "
            f"in {result.seconds:.1f} s{recovered}"
        )


def _all_queues(db_url: str) -> list[str]:
    from tablequeue import connect

    def names() -> list[str]:
        with connect(db_url) as database:
            return [str(row["name"]) for row in database.queues()]

    found: list[str] = _run(names)
    if not found:
        _fail("no queues in this database")
    return found


@pipeline.command()
@click.argument("queues", nargs=-1)
@click.option("--archive", "archive_root", help="Archive root to include.")
@click.option("--out", "json_path", type=click.Path(dir_okay=False), help="Write JSON here.")
@click.option("--png", "png_path", type=click.Path(dir_okay=False), help="Write a chart here.")
@spark_options
def report(
    queues: tuple[str, ...],
    archive_root: str | None,
    json_path: str | None,
    png_path: str | None,
    db_url: str,
    as_json: bool,
    master: str | None,
    confs: tuple[str, ...],
) -> None:
    """Latency percentiles, throughput per hour and error rates of QUEUES (default: all)."""
    _needs_extra()
    from .chart import draw_chart
    from .report import as_table, build_report, messages_frame

    names = queues or _all_queues(db_url)
    spark = _session(master, confs)
    result = _run(lambda: build_report(messages_frame(spark, db_url, names, archive_root)))
    data = result.to_json()
    if json_path:
        Path(json_path).write_text(json.dumps(data, indent=2) + "\n")
    if png_path:
        draw_chart(result, png_path)
    click.echo(json.dumps(data) if as_json else as_table(result))
