"""Heartbeats: the worker's row in `tablequeue_workers`, upserted every `heartbeat_interval`
seconds with what it is doing, deleted when it stops cleanly.

A heartbeat is for people and tools watching the workers (`tablequeue workers`, the API, the
admin UI, the operator's `WorkersReady`, `/queues/{name}/health`); it never decides whether the
worker is ready. A failed beat is one log line (when beats start failing, and when they work
again), and the next beat tries again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from importlib import metadata

import sqlalchemy as sa

from tablequeue import Database, Heartbeat
from tablequeue.errors import TableQueueError

from .database_health import DATABASE_ERRORS
from .waiting import sleep_unless

log = logging.getLogger("tablequeue.worker")
BEAT_ERRORS: tuple[type[Exception], ...] = (*DATABASE_ERRORS, OSError, TableQueueError)
"""What a beat may meet: logged, never the end of the worker."""
PRUNE_EVERY_BEATS = 12
"""Every 12th beat also deletes workers silent for over an hour (their rows age out)."""


def host_name() -> str:
    """The pod's name (`POD_NAME`, set by the operator from the downward API), else the host's."""
    return os.environ.get("POD_NAME") or socket.gethostname()


def version() -> str:
    try:
        return metadata.version("tablequeue")
    except metadata.PackageNotFoundError:
        return "unknown"


class Heartbeats:
    """Beats for one worker; `in_flight` and `counts` are read at every beat."""

    def __init__(
        self,
        database: Database,
        queue: str,
        worker_id: str,
        interval: float,
        in_flight: Callable[[], int],
        counts: Callable[[], tuple[int, int]],
    ) -> None:
        self.database = database
        self.queue = queue
        self.worker_id = worker_id
        self.interval = interval
        self.in_flight = in_flight
        self.counts = counts
        self.host = host_name()
        self.version = version()
        self.failing = False
        self._tried_to_create = False
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._beat_every(), name="heartbeat")

    async def stop(self) -> None:
        """Stop beating (a beat under way finishes first), then delete the row: a clean stop.
        One try: a worker that cannot reach the database leaves a row that ages out."""
        self._stop.set()
        if self._task is not None:
            await self._task
        try:
            await asyncio.to_thread(self.database.forget_worker, self.worker_id)
        except BEAT_ERRORS as error:
            log.warning(
                "cannot remove the heartbeat row; it will show as stale, then age out",
                extra={"error": str(error).splitlines()[0][:300]},
            )

    def heartbeat(self) -> Heartbeat:
        processed, failed = self.counts()
        return Heartbeat(
            worker_id=self.worker_id,
            queue=self.queue,
            host=self.host,
            pid=os.getpid(),
            version=self.version,
            heartbeat_seconds=self.interval,
            in_flight=self.in_flight(),
            processed=processed,
            failed=failed,
        )

    def _beat(self, prune: bool) -> None:
        try:
            self.database.heartbeat(self.heartbeat())
        except sa.exc.DBAPIError:
            if self.failing or self._tried_to_create:
                raise
            # A registry made before tablequeue_workers existed: make the table once (needs
            # the right to; `queue apply` and the operator make it too), then beat again.
            self._tried_to_create = True
            self.database.ensure_workers_table()
            self.database.heartbeat(self.heartbeat())
        if prune:
            self.database.prune_workers()

    async def _beat_every(self) -> None:
        """Beat at once, then every `interval` seconds until `stop` (also while the worker
        drains its running handlers after SIGTERM)."""
        beats = 0
        while not self._stop.is_set():
            try:
                await asyncio.to_thread(self._beat, beats % PRUNE_EVERY_BEATS == 0)
            except BEAT_ERRORS as error:
                if not self.failing:
                    log.warning(
                        "cannot record heartbeats",
                        extra={"error": str(error).splitlines()[0][:300]},
                    )
                self.failing = True
            else:
                if self.failing:
                    log.info("heartbeats recorded again")
                self.failing = False
            beats += 1
            await sleep_unless(self.interval, self._stop)
