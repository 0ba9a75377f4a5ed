"""Deleting archived messages from a queue table in bounded batches, only while unchanged.

Candidate for the core (`Queue.delete_finished(keys)`): the core has `purge` by status and age,
but nothing that deletes exactly the rows a caller has copied elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import sqlalchemy as sa
from pyspark import Accumulator
from pyspark.sql import Row

from tablequeue import Queue, connect

DELETE_BATCH = 1000
Key = tuple[int, int, str]
"""(id, version, status) of a row as it was archived."""


def delete_unchanged(queue: Queue, keys: Sequence[Key]) -> int:
    """Delete the rows whose id, version and status are still the archived ones, in one
    transaction; a row re-enqueued (new version) or given another status stays. Returns how many
    of the rows are gone from the table: those deleted now and those an earlier attempt deleted
    (a task Spark retries after losing its executor runs the whole partition again, and the
    lost attempt's count is not kept)."""
    if not keys:
        return 0
    t = queue.table
    ids = [key[0] for key in keys]
    statement = sa.delete(t).where(
        t.c.id.in_(ids),  # the primary key finds the rows; the tuples check
        sa.tuple_(t.c.id, t.c.version, t.c.status).in_(list(keys)),
    )
    kept = sa.select(sa.func.count()).select_from(t).where(t.c.id.in_(ids))
    with queue.storage.transaction() as connection:
        connection.execute(statement)
        return len(keys) - int(connection.execute(kept).scalar_one())


def partition_deleter(
    database_url: str, queue_name: str, batch_size: int, deleted: Accumulator[int]
) -> Callable[[Iterator[Row]], None]:
    """The function each partition of archived keys runs: one connection, one transaction per
    batch of `batch_size` rows (locks stay short; a crash loses at most the open batch, which
    the next run deletes)."""

    def delete(rows: Iterator[Row]) -> None:
        with connect(database_url) as database:
            queue = database.queue(queue_name)
            batch: list[Key] = []
            for row in rows:
                batch.append((int(row.id), int(row.version), str(row.status)))
                if len(batch) >= batch_size:
                    deleted.add(delete_unchanged(queue, batch))
                    batch.clear()
            deleted.add(delete_unchanged(queue, batch))

    return delete
