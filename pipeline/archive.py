"""Archive: finished messages older than the retention -> Parquet -> deleted from the table.

Layout: `<root>/queue=Q/status=S/date=YYYY-MM-DD/run=R/part-*.parquet` (date of
processed_at, else updated_at, in UTC). A run is journaled (see journal.py):

1. `R.started`; the rows are read through JDBC and written to Parquet under `run=R`;
2. `R.written`; the rows written are read back from the Parquet and deleted from the table in
   bounded batches, each only if its id, version and status are still the archived ones;
3. the markers go.

A crash in 1 leaves `started` alone: the next run removes R's files (its rows are all still in
the table) and archives them again. A crash in 2 (or between 1 and 2) leaves `written`: the
next run first finishes R's deletes from R's own files. Either way every message ends up in
exactly one place: the table or the archive, once.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tablequeue import connect, names
from tablequeue.errors import InvalidInput

from .deletes import DELETE_BATCH, partition_deleter
from .jdbc import read_queue_table
from .journal import STARTED, WRITTEN, Journal
from .progress import Progress

DEFAULT_STATUSES = (names.PROCESSED, names.ERROR, names.CANCELLED, names.EXPIRED)
PARTITIONS = ("queue", "status", "date", "run")
CRASH_ENV = "TABLEQUEUE_PIPELINE_CRASH_AT"
"""Tests set it to `archive-written` to kill the process between writing and deleting."""
CRASH_EXIT_CODE = 75


@dataclass
class ArchiveResult:
    queue: str
    archived: int
    deleted: int
    recovered_runs: list[str]
    recovered_deleted: int
    seconds: float
    root: str

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["rowsPerSecond"] = round(self.archived / self.seconds, 1) if self.seconds else None
        return out


def archive_queue(
    spark: SparkSession,
    database_url: str,
    queue_name: str,
    root: str,
    older_than: timedelta,
    statuses: Sequence[str] = DEFAULT_STATUSES,
    *,
    read_partitions: int | None = None,
    delete_batch: int = DELETE_BATCH,
    tell: Callable[[str], None] = lambda _line: None,
) -> ArchiveResult:
    """Archive one queue's finished messages older than `older_than` into `root`."""
    started = time.monotonic()
    for status in statuses:
        if names.status(status) == names.LEASED:
            raise InvalidInput("leased messages are being processed: they cannot be archived")
    with connect(database_url) as database:
        table = database.queue(queue_name).table
        with database.transaction() as connection:
            low, high = connection.execute(
                sa.select(sa.func.min(table.c.id), sa.func.max(table.c.id))
            ).one()
    bounds = None if low is None else (int(low), int(high))
    journal = Journal(spark, root, queue_name)
    recovered: list[str] = []
    recovered_deleted = 0
    finished = set(journal.runs(WRITTEN))
    for run in sorted(finished):
        tell(f"archive {queue_name}: run {run} wrote its Parquet but did not finish deleting")
        recovered_deleted += _delete_run(spark, journal, run, database_url, delete_batch, tell)[1]
        journal.clear(run)
        recovered.append(run)
    for run in journal.runs(STARTED):
        if run not in finished:
            tell(f"archive {queue_name}: run {run} stopped while writing; its files are removed")
            journal.remove_run_files(run)
            journal.clear(run)
            recovered.append(run)

    run = f"r{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}-{secrets.token_hex(3)}"
    cutoff = datetime.now(UTC) - older_than
    journal.mark(run, STARTED)
    ranges = read_partitions or spark.sparkContext.defaultParallelism
    rows = read_queue_table(spark, database_url, table.name, _read_options(bounds, ranges))
    finished_at = F.coalesce(F.col("processed_at"), F.col("updated_at"))
    selected = rows.where(F.col("status").isin(list(statuses)) & (finished_at < F.lit(cutoff)))
    selected = selected.withColumns(
        {"queue": F.lit(queue_name), "date": F.to_date(finished_at), "run": F.lit(run)}
    )
    tell(f"archive {queue_name}: writing run {run} (finished before {cutoff:%Y-%m-%d %H:%M:%S}Z)")
    selected.write.partitionBy(*PARTITIONS).mode("append").parquet(journal.root)
    journal.mark(run, WRITTEN)
    if os.environ.get(CRASH_ENV) == "archive-written":
        os._exit(CRASH_EXIT_CODE)
    archived, deleted = _delete_run(spark, journal, run, database_url, delete_batch, tell)
    journal.clear(run)
    return ArchiveResult(
        queue=queue_name,
        archived=archived,
        deleted=deleted,
        recovered_runs=recovered,
        recovered_deleted=recovered_deleted,
        seconds=time.monotonic() - started,
        root=journal.root,
    )


def _read_options(bounds: tuple[int, int] | None, partitions: int) -> dict[str, str]:
    """Read the table in parallel by id ranges (one connection per range)."""
    if bounds is None or partitions < 2:
        return {}
    return {
        "partitionColumn": "id",
        "lowerBound": str(bounds[0]),
        "upperBound": str(bounds[1] + 1),
        "numPartitions": str(partitions),
    }


def _delete_run(
    spark: SparkSession,
    journal: Journal,
    run: str,
    database_url: str,
    batch: int,
    tell: Callable[[str], None],
) -> tuple[int, int]:
    """Delete from the table the rows a run archived: (rows in the run's files, rows deleted)."""
    folders = journal.run_files(run)
    if not folders:
        return 0, 0
    keys = (
        spark.read.option("basePath", journal.root)
        .parquet(*folders)
        .select("id", "version", "status")
    )
    archived = keys.count()
    deleted = spark.sparkContext.accumulator(0)
    deleter = partition_deleter(database_url, journal.queue, batch, deleted)
    with Progress(spark, f"archive {journal.queue}: deleting", {"deleted": deleted}, tell):
        keys.foreachPartition(deleter)
    return archived, deleted.value
