"""tablequeue: the core API in-process (`enqueue_many`, `lease` + `complete`) and the worker.

Consumer: `python -m bench.systems.tq consume URL QUEUE BATCH READY` completes the last batch
and leases the next in one transaction (`settle_and_lease`), in a loop (10 ms sleep on an empty
lease). The worker variant runs `tablequeue worker` with the no-op
async handler; its latency handler is `record_latency` below.
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench.systems.common import BODY_SQL_PG, BODY_SQL_SQLITE, ConsumerArgs, Row, System, until
from bench.worker import TABLEQUEUE, is_ready
from tablequeue import NewMessage, connect
from tablequeue.models import Completion, Message
from tablequeue.spec import QueueResource
from tests.support.ports import free_port

_names = itertools.count()
BODY_SQL_MARIADB = (
    "json_object('OrderId', concat('A-', lpad(i, 8, '0')),"
    " 'Email', concat('customer', i % 997, '@example.com'), 'Currency', 'NOK', 'Total', 39.8,"
    " 'Items', json_array(json_object('Sku', 'SKU-000123', 'Qty', 2, 'Price', 19.9)),"
    " 'Note', 'door')"
)


class TableQueue(System):
    label = "tablequeue core API"
    module = "bench.systems.tq"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.db = connect(url)
        self.engine = self.db.dialect.name

    def create(self) -> str:
        name = f"peer-{os.getpid()}-{next(_names)}"
        self.db.apply(QueueResource.from_name(name))
        return name

    def drop(self, queue: str) -> None:
        """The queue and its table, and its results and attempts now: a worker's housekeeping
        deletes those of deleted queues (`purge_retained`), which put a row's leftovers into
        the next row's measurement (the first worker row after the core API's drains purged
        their ~500,000 results: 2-3x its CPU per message)."""
        history = self.db.queue(queue).storage.history
        self.db.delete_queue(queue, drop_table=True)
        with self.db.transaction() as connection:
            for table in history.all():
                connection.execute(sa.delete(table).where(table.c.queue == queue))

    def table(self, queue: str) -> str:
        return self.db.queue(queue).table.name

    def enqueue_each(self, queue: str, items: list[Row], deadline: float) -> int:
        q = self.db.queue(queue)
        for done, item in enumerate(items):
            if not until(deadline):
                return done
            q.enqueue(item)
        return len(items)

    def enqueue_batches(self, queue: str, items: list[Row], size: int, deadline: float) -> int:
        q = self.db.queue(queue)
        for first in range(0, len(items), size):
            if not until(deadline):
                return first
            q.enqueue_many([NewMessage(message=m) for m in items[first : first + size]])
        return len(items)

    def fill(self, queue: str, n: int) -> None:
        """One INSERT ... SELECT of rows as `enqueue` writes them, then the enqueue NOTIFY."""
        q = self.db.queue(queue)
        t, d = q.table, q.dialect
        if self.engine == "sqlite":
            seq = sa.select(sa.literal(1).label("i")).cte("seq", recursive=True)
            seq = seq.union_all(sa.select(seq.c.i + 1).where(seq.c.i < n))
            source: sa.FromClause = seq
            body, tracking = BODY_SQL_SQLITE, "lower(hex(randomblob(16)))"
        elif self.engine == "mariadb":  # MariaDB's Sequence engine: a table seq_1_to_<n>
            numbers = sa.table(f"seq_1_to_{int(n)}", sa.column("seq"))
            source = sa.select(numbers.c.seq.label("i")).subquery("g")
            body, tracking = BODY_SQL_MARIADB, "uuid()"
        else:
            source = sa.func.generate_series(1, n).table_valued("i").render_derived("g")
            body, tracking = BODY_SQL_PG, "gen_random_uuid()"
        values: list[sa.ColumnElement[Any]] = [
            sa.literal_column("'Pending'"),
            sa.literal_column("0"),
            sa.literal_column(body),
            sa.literal_column("1"),
            sa.literal_column("0"),
            d.now(),
            sa.literal_column(tracking),
            d.now(),
            d.now(),
        ]
        select = sa.select(*values).select_from(source)
        columns = ["status", "priority", "message", "version", "attempts", "process_after"]
        columns += ["tracking_id", "created_at", "updated_at"]
        with self.db.transaction() as connection:
            connection.execute(sa.insert(t).from_select(columns, select))
            d.notify(connection, t.name)

    def remaining(self, queue: str) -> int:
        return self.db.queue(queue).count()

    def relations(self, queue: str) -> list[str]:
        return [self.table(queue)]

    def close(self) -> None:
        self.db.close()


class TableQueueWorker(TableQueue):
    """`tablequeue worker` with the no-op async handler (concurrency 100)."""

    label = "tablequeue worker"

    def consumer(
        self, queue: str, batch: int, ready: Path, latency: Path | None
    ) -> tuple[list[str], Callable[[], bool]]:
        port = free_port()
        handler = "python:tablequeue.examples:noop_async"
        if latency:
            handler = "python:bench.systems.tq:record_latency"
        command = [TABLEQUEUE, "worker", queue, "--db", self.url]
        command += ["--handler", handler, "--host", "127.0.0.1", "--port", str(port)]
        command += ["--batch-size", str(batch), "--concurrency", "100", "--log-level", "warning"]
        if self.engine == "sqlite":
            command += ["--poll-max", "0.1"]
        return command, lambda: is_ready(port)


async def record_latency(message: Message) -> None:
    """Worker handler for the latency workload: append `Seq start-time` to $BENCH_LATENCY."""
    started = time.time()
    with open(os.environ["BENCH_LATENCY"], "a") as out:
        out.write(f"{message.message['Seq']} {started:.6f}\n")


def consume(args: ConsumerArgs) -> None:
    owner = f"bench-{os.getpid()}"
    with connect(args.url) as db:
        queue = db.queue(args.queue)
        args.is_ready()
        done: list[Completion] = []
        while True:
            _, leased = queue.settle_and_lease(owner, done, args.batch)
            for m in leased.messages:
                args.started(m.message.get("Seq"))
            done = [Completion(m) for m in leased.messages]
            if not done:
                time.sleep(0.01)


if __name__ == "__main__":
    consume(ConsumerArgs(sys.argv))
