"""Report: queue latency percentiles, throughput per hour and error rates, from the queue tables
and the archive together (an archived message is no longer in its table, so none counts twice).

What the tables record: `created_at` (enqueued), `process_after` (due), `started_at` (the lease
of the attempt that finished began), `processed_at` (finished successfully), `updated_at` (last
change; for Error rows, the last failure). The latencies of Processed messages: due -> finished
(`latency`, the queue latency of the charts in docs/guides/api.md), enqueued -> finished
(`timeInQueue`), due -> start
(`dueToStart`), enqueued -> start (`enqueueToStart`) and start -> finished (`startToFinish`).
The last three count messages with a start only: rows finished before tables recorded it
(schema version 4) have none, and archives written before then lack the column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from tablequeue import connect, names
from tablequeue.errors import InvalidInput

from .jdbc import read_queue_table

PERCENTILES = (0.5, 0.9, 0.99)
COLUMNS = (
    "queue",
    "status",
    "created_at",
    "process_after",
    "processed_at",
    "updated_at",
    "last_error",
    "started_at",
)
LATENCIES = {
    "latencySeconds": ("processed_at", "process_after"),
    "timeInQueueSeconds": ("processed_at", "created_at"),
    "dueToStartSeconds": ("started_at", "process_after"),
    "enqueueToStartSeconds": ("started_at", "created_at"),
    "startToFinishSeconds": ("processed_at", "started_at"),
}
"""Each latency figure: (later, earlier) time of Processed messages; percentiles skip nulls."""
TOP_ERRORS = 20
TABLE_COLUMNS = {
    "latencySeconds": "lat",
    "timeInQueueSeconds": "inq",
    "enqueueToStartSeconds": "wait",
    "startToFinishSeconds": "run",
}
"""The latency figures the terminal table shows, with their short headings."""


@dataclass
class Report:
    queues: dict[str, dict[str, Any]]
    throughput: list[dict[str, Any]]
    """Per queue and hour (UTC): finished messages and errors among them."""
    error_texts: list[dict[str, Any]]
    generated_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())

    def to_json(self) -> dict[str, Any]:
        return {
            "generatedAt": self.generated_at,
            "percentiles": list(PERCENTILES),
            "queues": self.queues,
            "throughputPerHour": self.throughput,
            "errorTexts": self.error_texts,
        }


def messages_frame(
    spark: SparkSession, database_url: str, queues: Sequence[str], archive: str | None
) -> DataFrame:
    """The COLUMNS of every message of `queues`: the tables' rows and the archived ones."""
    with connect(database_url) as database:
        tables = {name: database.queue(name).table.name for name in queues}
    frames = [
        read_queue_table(spark, database_url, table)
        .withColumn("queue", F.lit(name))
        .select(*COLUMNS)
        for name, table in tables.items()
    ]
    if archive is not None:
        try:
            archived = spark.read.option("mergeSchema", "true").parquet(archive)
        except AnalysisException as error:
            if error.getCondition() == "PATH_NOT_FOUND":  # a mistyped root: not silently none
                raise InvalidInput(f"archive not found: {archive}") from None
            archived = None  # the root is there, with nothing archived yet
        if archived is not None:
            if "started_at" not in archived.columns:  # written before tables recorded it
                archived = archived.withColumn("started_at", F.lit(None).cast("timestamp"))
            frames.append(
                archived.where(F.col("queue").isin(list(queues)))
                .select(*COLUMNS)
                .withColumn("queue", F.col("queue").cast("string"))
            )
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.unionByName(frame)
    return combined


def _seconds(later: str, earlier: str) -> Column:
    return (F.unix_micros(F.col(later)) - F.unix_micros(F.col(earlier))) / 1_000_000


def build_report(messages: DataFrame) -> Report:
    """The figures of a `messages_frame`."""
    finished_statuses = list(names.FINAL)
    finished_at = F.coalesce(F.col("processed_at"), F.col("updated_at"))
    is_error = (F.col("status") == names.ERROR).cast("int")
    queues: dict[str, dict[str, Any]] = {}
    for row in messages.groupBy("queue", "status").count().collect():
        queue = queues.setdefault(row["queue"], {"counts": {}})
        queue["counts"][row["status"]] = row["count"]
    finished = messages.where(F.col("status").isin(finished_statuses))
    for row in (
        finished.groupBy("queue").agg(F.count("*").alias("n"), F.sum(is_error).alias("e")).collect()
    ):
        queue = queues[row["queue"]]
        queue["finished"] = row["n"]
        queue["errors"] = row["e"]
        queue["errorRate"] = row["e"] / row["n"]
    processed = messages.where(
        (F.col("status") == names.PROCESSED) & F.col("processed_at").isNotNull()
    )
    latencies = processed.groupBy("queue").agg(
        *[
            F.percentile(_seconds(later, earlier), list(PERCENTILES)).alias(key)
            for key, (later, earlier) in LATENCIES.items()
        ]
    )
    for row in latencies.collect():
        queue = queues[row["queue"]]
        for key in LATENCIES:
            queue[key] = _by_percentile(row[key])
    for queue in queues.values():
        queue.setdefault("finished", 0)
        queue.setdefault("errors", 0)
        queue.setdefault("errorRate", None)
        for key in LATENCIES:
            queue.setdefault(key, None)
    hourly = (
        finished.groupBy("queue", F.date_trunc("hour", finished_at).alias("hour"))
        .agg(F.count("*").alias("finished"), F.sum(is_error).alias("errors"))
        .orderBy("queue", "hour")
    )
    throughput = [
        {
            "queue": row["queue"],
            "hour": row["hour"].replace(tzinfo=UTC).isoformat(),
            "finished": row["finished"],
            "errors": row["errors"],
        }
        for row in hourly.collect()
    ]
    first_line = F.trim(F.substring_index(F.coalesce(F.col("last_error"), F.lit("")), "\n", 1))
    texts = (
        messages.where(F.col("status") == names.ERROR)
        .groupBy("queue", first_line.alias("error"))
        .count()
        .orderBy(F.desc("count"), "queue", "error")
        .limit(TOP_ERRORS)
    )
    error_texts = [
        {
            "queue": row["queue"],
            "error": row["error"],
            "count": row["count"],
            "share": row["count"] / queues[row["queue"]]["errors"],
        }
        for row in texts.collect()
    ]
    return Report(dict(sorted(queues.items())), throughput, error_texts)


def _by_percentile(values: list[float] | None) -> dict[str, float] | None:
    """None when no message had the times (Spark's percentile of only nulls)."""
    if values is None:
        return None
    return {f"p{round(p * 100)}": value for p, value in zip(PERCENTILES, values, strict=True)}


def as_table(report: Report) -> str:
    """The report as text for a terminal."""
    lines = [
        f"{'queue':<24} {'finished':>9} {'errors':>7} {'err %':>6} "
        + " ".join(f"{f'{short} p50':>8} {'p90':>8} {'p99':>8}" for short in TABLE_COLUMNS.values())
    ]
    for name, queue in report.queues.items():
        rate = queue["errorRate"]
        cells = [f"{name:<24}", f"{queue['finished']:>9,}", f"{queue['errors']:>7,}"]
        cells.append(f"{rate * 100:>6.1f}" if rate is not None else f"{'-':>6}")
        for key in TABLE_COLUMNS:
            values = queue[key] or {}
            cells += [_duration(values.get(f"p{round(p * 100)}")) for p in PERCENTILES]
        lines.append(" ".join(cells))
    lines.append(
        "lat: due -> finished; inq: enqueued -> finished; wait: enqueued -> start; "
        "run: start -> finished (Processed messages)"
    )
    if report.error_texts:
        lines.append("")
        lines.append(f"{'queue':<24} {'count':>7} {'share':>6}  error")
        for entry in report.error_texts:
            lines.append(
                f"{entry['queue']:<24} {entry['count']:>7,} {entry['share'] * 100:>5.1f}%  "
                f"{entry['error'][:100]}"
            )
    return "\n".join(lines)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return f"{'-':>8}"
    if seconds < 120:
        return f"{seconds:>7.2f}s"
    if seconds < 7200:
        return f"{seconds / 60:>7.1f}m"
    return f"{seconds / 3600:>7.1f}h"
