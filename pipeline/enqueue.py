"""Bulk enqueue: a DataFrame's rows become messages of a queue, partitions in parallel.

Each partition opens one connection and enqueues in bounded batches through
`Queue.enqueue_many`, so the queue's own rules hold: its default status, identities as upserts,
and with `idempotent: true` an unchanged body discarded (a re-run of an unchanged catalogue
enqueues nothing). Rows that cannot be messages are written to a rejects output with the reason.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from pyspark import Accumulator
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.types import BooleanType, IntegerType, StringType, StructField, StructType

from tablequeue import NewMessage, connect, names

from .files import HadoopFiles
from .messages import PREPARED, MessageColumns, RowRejected, new_message
from .progress import Progress

DEFAULT_BATCH_SIZE = 1000
OUTCOMES = {
    "inserted": "inserted",
    "updated": "updated",
    "discarded": "unchanged",
    "kept": "unchanged",
}
"""Enqueued.outcome -> the counter it adds to: `unchanged` counts the rows left as they were (an
idempotent queue's equal body, or a row the queue's dedupe mode kept)."""
COUNTERS = ("inserted", "updated", "unchanged", "rejected")
REJECTS_SCHEMA = StructType(
    [
        StructField("reason", StringType()),
        StructField("body", StringType()),
        StructField("messageId", StringType()),
        StructField("at", StringType()),
        StructField("atGiven", BooleanType()),
        StructField("headers", StringType()),
        StructField("priority", IntegerType()),
        StructField("correlationId", StringType()),
        StructField("label", StringType()),
    ]
)
"""A rejected row: why, and the message fields as they came from the source (PREPARED)."""


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
    new_status: bool = False,
) -> EnqueueResult:
    """Enqueue every row of `frame` into `queue_name`; rows that cannot be messages go to
    `rejects_path` as JSON lines (`reason` and the message fields), by default
    `tablequeue-rejects-<queue>-<UTC time>`.

    One pass over the data: each partition validates its rows, enqueues the valid ones and
    hands the rejected ones to Spark's JSON writer. `partitions` coalesces (or spreads) the
    source first: each partition holds one connection while it runs, so at most
    min(partitions, executor cores) connections are open at once. A `columns.status` that is
    neither built in, nor the queue's default, nor held by a message is refused before Spark
    starts unless `new_status` (`Queue.refuse_unknown_statuses`).
    """
    started = time.monotonic()
    if columns.status is not None:
        names.settable_status(columns.status)
    with connect(database_url) as database:
        queue = database.queue(queue_name)  # QueueNotFound before Spark
        if not new_status:
            queue.refuse_unknown_statuses([columns.status], override="--new-status")
        idempotent = queue.spec.idempotent
    prepared = columns.prepared(frame).select(*PREPARED)
    if partitions is not None:
        current = prepared.rdd.getNumPartitions()
        prepared = (
            prepared.coalesce(partitions)
            if partitions < current
            else prepared.repartition(partitions)
        )
    counters = {name: spark.sparkContext.accumulator(0) for name in COUNTERS}
    writer = _partition_writer(database_url, queue_name, columns, batch_size, counters)
    rejects = spark.createDataFrame(prepared.rdd.mapPartitions(writer), REJECTS_SCHEMA)
    path = rejects_path or f"tablequeue-rejects-{queue_name}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    with Progress(spark, f"enqueue {queue_name}", counters, tell, progress_every):
        # The write is the one action: it runs every partition's enqueue once. A task Spark
        # retries runs its partition again (and counts it again): with messageIds on an
        # idempotent queue the second run changes nothing.
        rejects.write.mode("overwrite").json(path)
    rejected = counters["rejected"].value
    if rejected == 0 and rejects_path is None:
        HadoopFiles(spark, path).delete(path, recursive=True)
    return EnqueueResult(
        queue=queue_name,
        inserted=counters["inserted"].value,
        updated=counters["updated"].value,
        unchanged=counters["unchanged"].value,
        rejected=rejected,
        rejects_path=path if rejected else None,
        seconds=time.monotonic() - started,
        idempotent=idempotent,
    )


def _partition_writer(
    database_url: str,
    queue_name: str,
    columns: MessageColumns,
    batch_size: int,
    counters: dict[str, Accumulator[int]],
) -> Callable[[Iterable[Row]], Iterator[tuple[Any, ...]]]:
    """The function each partition runs on an executor: one connection, bounded batches;
    yields the rejected rows with their reason."""

    def write(rows: Iterable[Row]) -> Iterator[tuple[Any, ...]]:
        batch: list[NewMessage] = []
        rejected = 0
        with connect(database_url) as database:
            queue = database.queue(queue_name)

            def flush() -> None:
                outcomes = Counter(OUTCOMES[e.outcome] for e in queue.enqueue_many(batch))
                for name, count in outcomes.items():
                    counters[name].add(count)
                batch.clear()

            for row in rows:
                try:
                    batch.append(new_message(columns, *row))
                except RowRejected as error:
                    rejected += 1
                    yield (str(error), *row)
                    continue
                if len(batch) >= batch_size:
                    flush()
            flush()
        counters["rejected"].add(rejected)

    return write
