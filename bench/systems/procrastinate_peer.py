"""procrastinate on psycopg: `defer_async` and `batch_defer_async` of a no-op async task, and
`run_worker_async` (concurrency 1 per process, LISTEN/NOTIFY on, finished jobs deleted).
procrastinate fetches one job at a time: it has no batch size, so only batch 1 runs.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from collections.abc import Awaitable
from typing import Any, TypeVar

import procrastinate

from bench.systems.common import ConsumerArgs, Row, System, bodies, until

T = TypeVar("T")
_names = itertools.count()
_latency: ConsumerArgs | None = None


def make_app(url: str) -> procrastinate.App:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    @app.task(name="noop")
    async def noop(**body: Any) -> None:
        if _latency is not None:
            _latency.started(body.get("Seq"))

    return app


class Procrastinate(System):
    label = "procrastinate"
    module = "bench.systems.procrastinate_peer"
    batches = (1,)

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.loop = asyncio.new_event_loop()
        self.app = make_app(url)
        self.run(self.app.open_async())
        installed = self.run(
            self.app.connector.execute_query_one_async(
                "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS ok"
            )
        )
        if not installed["ok"]:
            self.run(self.app.schema_manager.apply_schema_async())
        self.task = self.app.tasks["noop"]

    def run(self, awaitable: Awaitable[T]) -> T:
        return self.loop.run_until_complete(awaitable)

    def create(self) -> str:
        self.run(self.app.connector.execute_query_async("TRUNCATE procrastinate_jobs CASCADE"))
        return f"peer_{os.getpid()}_{next(_names)}"

    def drop(self, queue: str) -> None:
        self.run(self.app.connector.execute_query_async("TRUNCATE procrastinate_jobs CASCADE"))

    def enqueue_each(self, queue: str, items: list[Row], deadline: float) -> int:
        task = self.task.configure(queue=queue)

        async def each() -> int:
            for done, item in enumerate(items):
                if not until(deadline):
                    return done
                await task.defer_async(**item)
            return len(items)

        return self.run(each())

    def enqueue_batches(self, queue: str, items: list[Row], size: int, deadline: float) -> int:
        task = self.task.configure(queue=queue)

        async def batches() -> int:
            for first in range(0, len(items), size):
                if not until(deadline):
                    return first
                await task.batch_defer_async(*items[first : first + size])
            return len(items)

        return self.run(batches())

    def fill(self, queue: str, n: int) -> None:
        self.run(self.task.configure(queue=queue).batch_defer_async(*bodies(n)))

    def remaining(self, queue: str) -> int:
        row = self.run(
            self.app.connector.execute_query_one_async(
                "SELECT count(*) AS n FROM procrastinate_jobs WHERE queue_name = %(q)s"
                " AND status IN ('todo', 'doing')",
                q=queue,
            )
        )
        return int(row["n"])

    def relations(self, queue: str) -> list[str]:
        return ["procrastinate_jobs", "procrastinate_events"]

    def close(self) -> None:
        self.run(self.app.close_async())
        self.loop.close()


async def consume(args: ConsumerArgs) -> None:
    global _latency
    _latency = args
    app = make_app(args.url)
    async with app.open_async():
        args.is_ready()
        await app.run_worker_async(
            queues=[args.queue],
            concurrency=1,
            wait=True,
            listen_notify=True,
            fetch_job_polling_interval=0.1,
            delete_jobs="always",
        )


if __name__ == "__main__":
    asyncio.run(consume(ConsumerArgs(sys.argv)))
