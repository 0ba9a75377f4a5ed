"""Housekeeping every worker of a queue shares: sweeping expired leases and messages, firing the
due ticks of the queue's schedules (each exactly once, whichever worker or operator claims it),
retention (one worker of a queue at a time, by the queue's housekeeping lease), and vacuuming
the table when finished messages left it bloated (PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from tablequeue import Database, Queue, metrics
from tablequeue.backoff import Backoff

from .database_health import DATABASE_ERRORS, DatabaseHealth
from .now_and_then import NowAndThen
from .waiting import sleep_unless

log = logging.getLogger("tablequeue.worker")
LONGEST_VACUUM_PAUSE = 60.0


async def sweep_every(
    interval: float, queue: Queue, health: DatabaseHealth, stopping: asyncio.Event
) -> None:
    """Apply the lease-expiry policy and expire messages, every `interval` until stopping."""
    while not stopping.is_set():
        try:
            swept = await asyncio.to_thread(queue.sweep)
            if swept.abandoned or swept.retried or swept.errored or swept.expired:
                log.info("swept", extra=swept.__dict__)
        except DATABASE_ERRORS as error:
            health.trouble(error)
        await sleep_unless(interval, stopping)


async def fire_schedules_every(
    interval: float, queue: Queue, health: DatabaseHealth, stopping: asyncio.Event
) -> None:
    """Enqueue the messages of due schedule ticks, every `interval` until stopping."""
    while not stopping.is_set():
        try:
            for fired in await asyncio.to_thread(queue.fire_schedules):
                log.info(
                    "schedule fired" if fired.tick else "schedule skipped missed ticks",
                    extra={
                        "schedule": fired.schedule,
                        "tick": fired.tick.isoformat() if fired.tick else None,
                        "due_ticks": fired.due,
                        "message_row": fired.message.id if fired.message else None,
                        "topic": fired.topic,
                        "deliveries": len(fired.deliveries),
                        "next_tick": fired.next_tick.isoformat(),
                    },
                )
        except DATABASE_ERRORS as error:
            health.trouble(error)
        except Exception:  # a schedule that cannot render must not stop the others or the worker
            log.exception("firing the queue's schedules failed")
        await sleep_unless(interval, stopping)


async def vacuum_when_bloated(
    interval: float, queue: Queue, health: DatabaseHealth, stopping: asyncio.Event
) -> None:
    """Check every `interval` whether the table needs a vacuum, until stopping. After a vacuum
    the checks back off (dead rows an old transaction still sees survive a vacuum)."""
    after_vacuum = Backoff(
        min(2 * interval, LONGEST_VACUUM_PAUSE), LONGEST_VACUUM_PAUSE, jitter=False
    )
    pause = interval
    while not stopping.is_set():
        await sleep_unless(pause, stopping)
        try:
            vacuumed = await asyncio.to_thread(queue.vacuum)
        except DATABASE_ERRORS as error:
            health.trouble(error)
            continue
        if vacuumed:
            log.info("vacuumed the queue table")
            pause = after_vacuum.next()
        else:
            after_vacuum.reset()
            pause = interval


async def purge_every(
    interval: float,
    queue: Queue,
    owner: str,
    audit: AuditRetention,
    health: DatabaseHealth,
    stopping: asyncio.Event,
) -> None:
    """Apply the queue's retention every `interval` (the first round at once)
    while this worker holds the queue's housekeeping lease, and the audit trail's; give the
    lease up when stopping."""
    while not stopping.is_set():
        try:
            purged = await asyncio.to_thread(queue.purge_retained, owner)
        except DATABASE_ERRORS as error:
            health.trouble(error)
            purged = None
        if purged is not None:
            await audit.purge(queue.name)
            for what, count in (
                ("messages", purged.messages),
                ("results", purged.results),
                ("attempts", purged.attempts),
                ("subscriptions", purged.subscriptions),
                ("leftovers", purged.leftovers),
            ):
                if count:
                    metrics.worker_purged.labels(queue=queue.name, what=what).inc(count)
            if purged.total:
                log.info("purged", extra=purged.__dict__ | {"owner": owner})
        await sleep_unless(interval, stopping)
    with contextlib.suppress(*DATABASE_ERRORS):  # else the lease lapses by itself
        await asyncio.to_thread(queue.release_housekeeping, owner)


class AuditRetention:
    """Deleting audit entries past `keep` (any worker of any queue may, at once): a worker
    without rights on `tablequeue_audit` works on and says so in a log line now and then,
    never by turning unready."""

    def __init__(self, database: Database, keep: timedelta) -> None:
        self.database, self.keep = database, keep
        self._cannot_purge = NowAndThen(
            "cannot purge the audit trail (grant SELECT, DELETE on tablequeue_audit)"
        )

    async def purge(self, queue: str) -> None:
        try:
            deleted = await asyncio.to_thread(self.database.purge_audit, self.keep)
        except DATABASE_ERRORS as error:
            self._cannot_purge.warn(error)
            return
        if deleted:
            metrics.worker_purged.labels(queue=queue, what="audit").inc(deleted)
            log.info("purged the audit trail", extra={"count": deleted})
