"""Settling: outcomes of finished handlers on their way to the database.

An outcome waits here until it is recorded, in one of two ways:
- with the next lease (`settle_and_lease`: one transaction, or on PostgreSQL two statements
  of their own): a busy worker pays no transaction of its own for them;
- by the settler (`flush_on_time`) when no lease took it within SETTLE_DELAY (handlers still
  running, or nothing to lease), at once while the worker stops.
Outcomes a failed transaction took are put back: the handlers have run, so nothing is forgotten
while the database is away. At shutdown `close()` lets the settler end once every outcome,
including those of a transaction under way, is recorded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from tablequeue import Queue
from tablequeue.models import Completion, Failure, LeaseBatch, Settled

from .database_health import DATABASE_ERRORS, DatabaseHealth, database_backoff
from .metrics import WorkerMetrics
from .rollup import Rollup
from .waiting import sleep_unless

if TYPE_CHECKING:
    from .tracing import Tracing

log = logging.getLogger("tablequeue.worker")
Outcome = Completion | Failure

SETTLE_BATCH = 1000
SETTLE_DELAY = 0.05
"""Seconds an outcome waits for the next lease to record it, before the settler does."""


class Settlement:
    """Outcomes waiting to be recorded: add, take for the next lease, flush on time, put back
    on failure."""

    def __init__(
        self,
        queue: Queue,
        owner: str,
        health: DatabaseHealth,
        metrics: WorkerMetrics,
        rollup: Rollup | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        self.queue = queue
        self.tracing = tracing
        self.owner = owner
        self.health = health
        self.metrics = metrics
        self.rollup = rollup
        self._waiting: list[Outcome] = []
        self._in_flight: list[list[Outcome]] = []  # taken by transactions not finished yet
        self._apart = False  # an outcome broke a settle-and-lease: settle on their own
        self._closed = False
        self._unrecordable: set[int] = set()
        self._changed = asyncio.Event()

    def __len__(self) -> int:
        """Outcomes waiting, not counting those a transaction under way has taken."""
        return len(self._waiting)

    def message_ids(self) -> list[int]:
        """The messages of the outcomes not recorded yet, waiting or taken by a transaction under
        way: their leases are still held."""
        taken = [outcome for batch in self._in_flight for outcome in batch]
        return [outcome.message.id for outcome in self._waiting + taken]

    def tracked_ids(self) -> list[int]:
        """`message_ids`, and the messages whose outcome could not be recorded (left to their
        lease's expiry): their handlers ran, so a give-back must not put them back either."""
        return self.message_ids() + sorted(self._unrecordable)

    def add(self, outcome: Outcome) -> None:
        self._waiting.append(outcome)
        self._changed.set()

    def close(self) -> None:
        """No outcome comes any more (every handler has ended): the settler ends once the
        waiting ones are recorded."""
        self._closed = True
        self._changed.set()

    async def settle_and_lease(self, wanted: int, lease_seconds: float | None) -> LeaseBatch | None:
        """Lease up to `wanted` messages, recording the waiting outcomes with the lease.

        A database error is raised with the outcomes put back. None: an outcome broke the
        statement; the settler records them on their own from now, isolating it.
        """
        outcomes = [] if self._apart else self._take()
        self._in_flight.append(outcomes)
        started = time.time_ns() if self.tracing is not None else 0
        try:
            settled, batch = await asyncio.to_thread(
                self.queue.settle_and_lease, self.owner, outcomes, wanted, lease_seconds
            )
        except DATABASE_ERRORS:
            self._put_back(outcomes)
            raise
        except Exception:  # an outcome no engine takes: the settler isolates it
            log.exception("could not record outcomes with the next lease")
            self._put_back(outcomes)
            self._apart = True
            return None
        finally:
            self._in_flight.remove(outcomes)
            self._changed.set()
        self._count(settled, outcomes)
        if self.tracing is not None:
            self.tracing.leased(batch.messages, started, time.time_ns())
        return batch

    async def flush_on_time(self, stopping: asyncio.Event) -> None:
        """The settler: records outcomes that no lease took within SETTLE_DELAY (at once when
        stopping), retrying while the database is away. Ends after `close()`, once nothing is
        waiting or in flight."""
        backoff = database_backoff()
        while True:
            if not self._waiting:
                if self._closed and not self._in_flight:
                    return
                self._changed.clear()
                await self._changed.wait()
                continue
            if not stopping.is_set() and not self._apart:
                await sleep_unless(SETTLE_DELAY, stopping)  # the next lease may record them
            batch = self._take()
            if not batch:
                continue
            self._in_flight.append(batch)
            try:
                await self._record(batch)
                backoff.reset()
            except DATABASE_ERRORS as error:
                self._put_back(batch)
                self.health.trouble(error)
                await asyncio.sleep(backoff.next())
            finally:
                self._in_flight.remove(batch)

    async def _record(self, batch: list[Outcome]) -> None:
        """Record outcomes; one that breaks the statement is found by recording them one by
        one, logged and left to its lease's expiry (onLeaseExpired) rather than blocking all."""
        try:
            settled = await asyncio.to_thread(self.queue.settle, self.owner, batch)
            self._count(settled, batch)
        except DATABASE_ERRORS:
            raise
        except Exception:
            for outcome in batch:
                try:
                    settled = await asyncio.to_thread(self.queue.settle, self.owner, [outcome])
                    self._count(settled, [outcome])
                except DATABASE_ERRORS:
                    raise
                except Exception:
                    log.exception(
                        "cannot record an outcome; the message waits for its lease to expire",
                        extra={"message_id": outcome.message.id},
                    )
                    self._unrecordable.add(outcome.message.id)
                    if self.tracing is not None:
                        self.tracing.forget([outcome.message.id])
        self._apart = False

    def _count(self, settled: Settled, outcomes: list[Outcome]) -> None:
        self.metrics.count_settled(settled)
        if self.rollup is not None:
            self.rollup.settled(settled, outcomes)
        if self.tracing is not None:
            self.tracing.settled(outcomes, time.time_ns())

    def _take(self) -> list[Outcome]:
        batch, self._waiting = self._waiting[:SETTLE_BATCH], self._waiting[SETTLE_BATCH:]
        return batch

    def _put_back(self, outcomes: list[Outcome]) -> None:
        """Outcomes a failed transaction took: first in line again (their handlers have run)."""
        self._waiting[:0] = outcomes
