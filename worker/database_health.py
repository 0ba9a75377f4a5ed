"""The worker's view of its database: ready, or away and retried with one back-off."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar

import sqlalchemy as sa

from tablequeue import metrics
from tablequeue.backoff import Backoff
from tablequeue.errors import DatabaseUnavailable

log = logging.getLogger("tablequeue.worker")
T = TypeVar("T")

DATABASE_ERRORS: tuple[type[Exception], ...] = (DatabaseUnavailable, sa.exc.DBAPIError)
"""What a database that went away raises: retried, never the end of the worker."""


def database_backoff() -> Backoff:
    """The pacing of every retry while the database is away (jittered, 0.2 s up to 30 s)."""
    return Backoff(first=0.2, cap=30.0)


class DatabaseHealth:
    """Readiness (`/readyz`) as the last database call left it."""

    def __init__(self, queue: str) -> None:
        self.queue = queue
        self.ready = False

    def trouble(self, error: BaseException) -> None:
        """A database call failed: not ready, counted, one log line."""
        self.ready = False
        metrics.worker_errors.labels(kind="database", queue=self.queue).inc()
        task = asyncio.current_task()  # which of the worker's tasks met it (lease, settle...)
        log.warning(
            "database unavailable",
            extra={
                "error": str(error).splitlines()[0][:300],
                "task": task.get_name() if task is not None else None,
            },
        )

    async def retrying(self, call: Callable[[], T]) -> T:
        """Run a blocking database call in a thread until it succeeds."""
        backoff = database_backoff()
        while True:
            try:
                return await asyncio.to_thread(call)
            except DATABASE_ERRORS as error:
                self.trouble(error)
                await asyncio.sleep(backoff.next())
