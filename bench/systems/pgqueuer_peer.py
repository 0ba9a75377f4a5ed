"""pgqueuer on asyncpg: `Queries.enqueue` (one, or lists) and a `QueueManager` with a no-op
async entrypoint (`run(batch_size=BATCH)`, LISTEN/NOTIFY on). One pgqueuer table holds every
queue; the entrypoint name stands for the queue, and `create` starts from empty tables.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from collections.abc import Coroutine
from datetime import timedelta
from typing import Any, TypeVar

import asyncpg
from pgqueuer import AsyncpgDriver, Job, Queries, QueueManager

from bench.systems.common import ConsumerArgs, Row, System, bodies, until

T = TypeVar("T")
_names = itertools.count()


class Pgqueuer(System):
    label = "pgqueuer"
    module = "bench.systems.pgqueuer_peer"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.loop = asyncio.new_event_loop()
        self.conn = self.run(asyncpg.connect(url))
        self.queries = Queries(AsyncpgDriver(self.conn))
        if not self.run(self.conn.fetchval("SELECT to_regclass('pgqueuer') IS NOT NULL")):
            self.run(self.queries.install())

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    def create(self) -> str:
        self.run(self.conn.execute("TRUNCATE pgqueuer, pgqueuer_log, pgqueuer_statistics"))
        return f"peer_{os.getpid()}_{next(_names)}"

    def drop(self, queue: str) -> None:
        self.run(self.conn.execute("DELETE FROM pgqueuer WHERE entrypoint = $1", queue))

    def enqueue_each(self, queue: str, items: list[Row], deadline: float) -> int:
        async def each() -> int:
            for done, item in enumerate(items):
                if not until(deadline):
                    return done
                await self.queries.enqueue(queue, json.dumps(item).encode())
            return len(items)

        return self.run(each())

    def enqueue_batches(self, queue: str, items: list[Row], size: int, deadline: float) -> int:
        async def batches() -> int:
            for first in range(0, len(items), size):
                if not until(deadline):
                    return first
                chunk: list[bytes | None] = [
                    json.dumps(m).encode() for m in items[first : first + size]
                ]
                await self.queries.enqueue([queue] * len(chunk), chunk, [0] * len(chunk))
            return len(items)

        return self.run(batches())

    def fill(self, queue: str, n: int) -> None:
        payloads: list[bytes | None] = [json.dumps(m).encode() for m in bodies(n)]
        self.run(self.queries.enqueue([queue] * n, payloads, [0] * n))  # one statement

    def remaining(self, queue: str) -> int:
        query = "SELECT count(*) FROM pgqueuer WHERE entrypoint = $1"
        return int(self.run(self.conn.fetchval(query, queue)))

    def relations(self, queue: str) -> list[str]:
        return ["pgqueuer", "pgqueuer_log"]

    def close(self) -> None:
        self.run(self.conn.close())
        self.loop.close()


async def consume(args: ConsumerArgs) -> None:
    connection = await asyncpg.connect(args.url)
    qm = QueueManager(Queries(AsyncpgDriver(connection)))

    @qm.entrypoint(args.queue)
    async def noop(job: Job) -> None:
        if args.latency:
            args.started(json.loads(job.payload or b"{}").get("Seq"))

    args.is_ready()
    await qm.run(batch_size=args.batch, dequeue_timeout=timedelta(seconds=1))


if __name__ == "__main__":
    asyncio.run(consume(ConsumerArgs(sys.argv)))
