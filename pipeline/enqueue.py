"""Bulk enqueue: a DataFrame's rows become messages of a queue, partitions in parallel.

Each partition opens one connection and enqueues in bounded batches through
`Queue.enqueue_many`, so the queue's own rules hold: its default status, identities as upserts,
and with `idempotent: true` an unchanged body discarded (a re-run of an unchanged catalogue
enqueues nothing). Rows that cannot be messages are written to a rejects output with the reason.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from pyspark import Accumulator
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from tablequeue import NewMessage, connect, names

from .messages import PREPARED, MessageColumns, new_message, rejection
from .progress import Progress

REASON = "tq_reject_reason"
DEFAULT_BATCH_SIZE = 1000
OUTCOMES = {"inserted": "inserted", "updated": "updated", "discarded": "unchanged"}
"""Enqueued.outcome -> the counter it adds to."""


@dataclass
class EnqueueResult:
    queue: str
    inserted: int
    updated: int
    unchanged: int
    rejected: int
    rejects_path: str | None
    seconds: float
    idempotent: bool

    @property
    def rows(self) -> int:
        return self.inserted + self.updated + self.unchanged + self.rejected

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["messagesPerSecond"] = round(self.rows / self.seconds, 1) if self.seconds else None
        return out


def enqueue_frame(
    spark: SparkSession,
    frame: DataFrame,
    database_url: str,
    queue_name: str,
    columns: MessageColumns,
    *,
    rejects_path: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    partitions: int | None = None,
    tell: Callable[[str], None] = lambda _line: None,
    progress_every: float = 5.0,
) -> EnqueueResult:
    """Enqueue every row of `frame` into `queue_name`; rejects go to `rejects_path` as JSON lines
    (`reason`, `row`), by default `tablequeue-rejects/<queue>-<UTC time>`.

    `partitions` (default: Spark's default parallelism) is how many partitions write, each with
    its own connection: at most min(partitions, executor cores) connections are open at once.
    Rows of one messageId go to one partition, so concurrent batches never touch the same row.
    """
    started = time.monotonic()
    if columns.status is not None:
        names.settable_status(columns.status)
    with connect(database_url) as database:
        queue = database.queue(queue_name)  # QueueNotFound before any Spark work
        idempotent = queue.spec.idempotent
    prepared = columns.prepared(frame)
    reason = F.udf(lambda *values: rejection(columns, *values), StringType())
    checked = prepared.withColumn(REASON, reason(*[F.col(c) for c in PREPARED])).persist()
    try:
        rejected, rejects_path = _write_rejects(checked, frame.columns, queue_name, rejects_path)
        counters = {name: spark.sparkContext.accumulator(0) for name in OUTCOMES.values()}
        valid = checked.where(F.col(REASON).isNull()).select(*PREPARED)
        count = partitions or spark.sparkContext.defaultParallelism
        valid = (
            valid.repartition(count, F.col(PREPARED[1]))
            if columns.id_column
            else valid.repartition(count)
        )
        writer = _partition_writer(database_url, queue_name, columns, batch_size, counters)
        with Progress(spark, f"enqueue {queue_name}", counters, tell, progress_every):
            valid.foreachPartition(writer)
    finally:
        checked.unpersist()
    return EnqueueResult(
        queue=queue_name,
        inserted=counters["inserted"].value,
        updated=counters["updated"].value,
        unchanged=counters["unchanged"].value,
        rejected=rejected,
        rejects_path=rejects_path,
        seconds=time.monotonic() - started,
        idempotent=idempotent,
    )


def _write_rejects(
    checked: DataFrame, source_columns: list[str], queue_name: str, path: str | None
) -> tuple[int, str | None]:
    rejects = checked.where(F.col(REASON).isNotNull()).select(
        F.col(REASON).alias("reason"),
        F.to_json(F.struct(*[F.col(c) for c in source_columns])).alias("row"),
    )
    rejected = rejects.count()
    if rejected == 0:
        return 0, None
    if path is None:
        path = f"tablequeue-rejects/{queue_name}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    rejects.write.mode("overwrite").json(path)
    return rejected, path


def _partition_writer(
    database_url: str,
    queue_name: str,
    columns: MessageColumns,
    batch_size: int,
    counters: dict[str, Accumulator[int]],
) -> Callable[[Iterator[Row]], None]:
    """The function each partition runs on an executor: one connection, bounded batches."""

    def write(rows: Iterator[Row]) -> None:
        batch: list[NewMessage] = []
        with connect(database_url) as database:
            queue = database.queue(queue_name)

            def flush() -> None:
                outcomes = Counter(OUTCOMES[e.outcome] for e in queue.enqueue_many(batch))
                for name, count in outcomes.items():
                    counters[name].add(count)
                batch.clear()

            for row in rows:
                batch.append(new_message(columns, *row))
                if len(batch) >= batch_size:
                    flush()
            flush()

    return write
