"""Lease keeping: the worker's leases outlive its handlers, and handlers stop when they must.

- `keep`: extends the held leases every third of the lease, and checks every second or two that
  running messages are still held, stopping handlers of cancelled or swept messages;
- `enforce_time_limit`: cancels handlers past executionTimeoutSeconds, a failure of the message.
"""

from __future__ import annotations

import asyncio
import time

from tablequeue import Queue

from .database_health import DATABASE_ERRORS, DatabaseHealth
from .held import HeldMessages
from .metrics import WorkerMetrics
from .settling import Settlement

CANCEL_CHECK_SECONDS = 1.0


class LeaseKeeper:
    def __init__(
        self,
        queue: Queue,
        owner: str,
        held: HeldMessages,
        settlement: Settlement,
        health: DatabaseHealth,
        metrics: WorkerMetrics,
    ) -> None:
        self.queue = queue
        self.owner = owner
        self.held = held
        self.settlement = settlement
        self.health = health
        self.metrics = metrics

    async def keep(self, lease_seconds: float) -> None:
        """Runs until cancelled, not ended by stopping: handlers finishing in the grace period
        keep their leases (and still learn of cancellation)."""
        extend_every = min(max(lease_seconds / 3, 0.5), 300.0)
        last_extended = time.monotonic()
        while True:
            await asyncio.sleep(min(CANCEL_CHECK_SECONDS, extend_every))
            extend = time.monotonic() - last_extended >= extend_every
            if extend:  # outcomes not recorded yet hold their leases too
                ids = self.held.message_ids() + self.settlement.message_ids()
            else:
                ids = list(self.held.running)
            if not ids:
                continue
            try:
                if extend:
                    still = await asyncio.to_thread(
                        self.queue.extend, self.owner, ids, lease_seconds
                    )
                    last_extended = time.monotonic()
                else:
                    still = await asyncio.to_thread(self.queue.held, self.owner, ids)
            except DATABASE_ERRORS as error:
                self.health.trouble(error)
                continue
            for lost in set(ids) - still:
                self.held.lose(lost)

    async def enforce_time_limit(self, limit: float) -> None:
        """Cancel handlers past the limit: one timer for all of them, sleeping until the oldest
        running handler's deadline (a timeout per message costs more)."""
        running = self.held.running
        while True:
            now = time.monotonic()
            for entry in list(running.values()):
                if entry.stop_reason is None and now - entry.started >= limit:
                    entry.stop(f"execution time limit of {limit:g}s exceeded", fails=True)
                    self.metrics.timeout_errors.inc()
            starts = [entry.started for entry in running.values() if entry.stop_reason is None]
            if starts:
                await asyncio.sleep(max(min(starts) + limit - time.monotonic(), 0.001))
            else:
                self.held.handler_started.clear()
                await self.held.handler_started.wait()
