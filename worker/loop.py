"""The worker loop: lease in batches, run up to `concurrency` handlers, settle outcomes in batches.

Tasks of one worker process, all on one asyncio loop (database calls run in threads):
- lease loop: leases `batch_size` when its buffer is empty and a handler slot is free, recording
  the outcomes finished so far in the same transaction; polls with adaptive delay (full batch:
  again at once; empty: back off to `poll_max`), woken early by LISTEN/NOTIFY on PostgreSQL;
- settler: records outcomes the lease loop did not take within SETTLE_DELAY (handlers still
  running, or nothing to lease), in one transaction per batch, retrying while the database is
  away so no finished work is forgotten;
- lease keeper: extends held leases every third of the lease, and checks every second or two
  that running messages are still held, cancelling handlers of cancelled or swept messages;
- sweeper: applies the lease-expiry policy and expires messages.
On SIGTERM: stop leasing, give back unstarted messages, let running handlers finish within the
grace period, record everything, exit 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import signal
import time
import traceback
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import sqlalchemy as sa

from tablequeue import metrics
from tablequeue.database import Database
from tablequeue.dialects import notify_channel
from tablequeue.errors import DatabaseUnavailable, QueueNotFound
from tablequeue.models import Completion, Failure, Message, Settled
from tablequeue.queue import Queue

from .config import WorkerConfig
from .handlers import (
    MAX_ERROR_TEXT,
    HandlerContext,
    HandlerFailed,
    HttpHandler,
    PythonHandler,
)
from .listener import listen

__all__ = ["Worker", "WorkerConfig"]  # WorkerConfig lives in .config; imported from here too

log = logging.getLogger("tablequeue.worker")
T = TypeVar("T")
SETTLE_BATCH = 1000
SETTLE_DELAY = 0.05
"""Seconds an outcome waits for the next lease to record it, before the settler does."""
CANCEL_CHECK_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 30.0


@dataclass
class Running:
    message: Message
    task: asyncio.Task[None]
    started: float
    stop_reason: str | None = None
    """Why the worker cancelled the handler, if it did."""
    stop_fails: bool = False
    """The stop is the message's failure (time limit, grace period), not a lost lease."""


class Worker:
    def __init__(self, config: WorkerConfig, database: Database, handler: Any) -> None:
        self.config = config
        self.database = database
        self.handler: HttpHandler | PythonHandler = handler
        self.queue: Queue | None = None
        self.ready = False
        self.stopping = asyncio.Event()
        self._wake = asyncio.Event()
        self._slot_freed = asyncio.Event()
        self._first_started = asyncio.Event()
        self._buffer: deque[Message] = deque()
        self._running: dict[int, Running] = {}
        self._unsettled: list[Completion | Failure] = []
        self._settling = 0  # outcomes taken by a transaction that has not finished yet
        self._settle_apart = False  # an outcome broke a settle-and-lease: settle on their own
        self._outcome_arrived = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._labels = {"queue": config.queue}
        self._metrics = _Metrics(config.queue)
        metrics.worker_in_flight.labels(queue=config.queue).set_function(lambda: len(self._running))

    # --- running ------------------------------------------------------------------------------

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=32))
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        self.queue = await self._open_queue()
        if self.queue is None:
            return 0  # stopped before the database could be reached
        self.config.resolve(self.queue)
        log.info("worker started", extra=self._describe())
        self._tasks = [
            asyncio.create_task(self._lease_loop(), name="lease"),
            asyncio.create_task(self._settle_loop(), name="settle"),
            asyncio.create_task(self._keep_leases(), name="keep"),
            asyncio.create_task(self._sweep_loop(), name="sweep"),
            asyncio.create_task(self._vacuum_loop(), name="vacuum"),
        ]
        if self.config.execution_timeout:
            self._tasks.append(asyncio.create_task(self._enforce_time_limit(), name="time limit"))
        if self.config.listen and self.database.dialect.name == "postgresql":
            channel = notify_channel(self.queue.table.name)
            self._tasks.append(
                asyncio.create_task(listen(self.database.url, channel, self._wake), name="listen")
            )
        await self.stopping.wait()
        await self._shut_down()
        return 0

    def stop(self) -> None:
        if not self.stopping.is_set():
            log.info("stopping: no more leases; running handlers may finish")
        self.ready = False
        self.stopping.set()
        self._wake.set()

    def alive(self) -> bool:
        return not any(task.done() and not task.cancelled() for task in self._tasks)

    def _describe(self) -> dict[str, Any]:
        c = self.config
        return {
            "queue": c.queue,
            "owner": c.owner,
            "batch_size": c.batch_size,
            "concurrency": c.concurrency,
            "lease_seconds": c.lease_seconds,
            "execution_timeout": c.execution_timeout,
            "poll": [c.poll_min, c.poll_max],
        }

    async def _open_queue(self) -> Queue | None:
        backoff = Backoff()
        while not self.stopping.is_set():
            try:
                queue = await asyncio.to_thread(self.database.queue, self.config.queue)
                self.ready = True
                return queue
            except (DatabaseUnavailable, QueueNotFound, sa.exc.DBAPIError) as error:
                self._database_trouble(error)
                await self._sleep(backoff.next())
        return None

    # --- leasing ------------------------------------------------------------------------------

    async def _lease_loop(self) -> None:
        assert self.queue is not None and self.config.batch_size and self.config.concurrency
        delay = self.config.poll_min or 0.1
        backoff = Backoff()
        while not self.stopping.is_set():
            while len(self._running) >= self.config.concurrency and not self.stopping.is_set():
                self._slot_freed.clear()
                await _wait_any(self._slot_freed, self.stopping)
            if self.stopping.is_set():
                return
            if not self._buffer:
                self._wake.clear()
                wanted = self.config.batch_size
                outcomes = [] if self._settle_apart else self._take_unsettled()
                self._settling += len(outcomes)
                try:
                    settled, batch = await asyncio.to_thread(
                        self.queue.settle_and_lease,
                        self.config.owner,
                        outcomes,
                        wanted,
                        self.config.lease_seconds,
                    )
                except (DatabaseUnavailable, sa.exc.DBAPIError) as error:
                    self._unsettled[:0] = outcomes  # keep them: the handlers have run
                    self._database_trouble(error)
                    await self._sleep(backoff.next())
                    continue
                except Exception:  # an outcome no engine takes: the settler isolates it
                    log.exception("could not record outcomes with the next lease")
                    self._unsettled[:0] = outcomes
                    self._settle_apart = True
                    continue
                finally:
                    self._settling -= len(outcomes)
                    self._outcome_arrived.set()
                self._count(settled)
                backoff.reset()
                self.ready = True
                if batch.messages:
                    self._metrics.lease_batches.inc()
                    log.info(
                        "leased batch",
                        extra={
                            "correlation_id": batch.correlation_id,
                            "count": len(batch.messages),
                        },
                    )
                self._buffer.extend(batch.messages)
                if len(batch.messages) == wanted:
                    delay = 0.0
                elif batch.messages:
                    delay = self.config.poll_min or 0.1
                else:
                    if self.config.exit_when_idle and not self._running and not self._unsettled:
                        log.info("queue idle: exiting as asked")
                        self.stop()
                        return
                    delay = min(
                        max(delay * 2, self.config.poll_min or 0.1), self.config.poll_max or 5
                    )
                    await self._sleep(delay, wake=self._wake)
                    continue
            while (
                self._buffer
                and len(self._running) < self.config.concurrency
                and not self.stopping.is_set()  # a batch that arrives now is released
            ):
                self._start(self._buffer.popleft())
            if delay and not self._buffer:
                await self._sleep(delay, wake=self._wake)

    def _start(self, message: Message) -> None:
        task = asyncio.create_task(self._process(message))
        self._running[message.id] = Running(message, task, time.monotonic())
        if not self._first_started.is_set():
            self._first_started.set()

    async def _process(self, message: Message) -> None:
        assert self.queue is not None
        m = self._metrics
        running = self._running[message.id]  # _start registered it before this task ran
        waited = (datetime.now(UTC) - message.process_after).total_seconds()
        m.queue_latency.observe(max(waited, 0.0))
        context = HandlerContext(self.database, self.queue, message)
        outcome: Completion | Failure | None
        try:
            result = await self.handler(message, context)
            outcome = Completion(
                message,
                process_again_at=result.process_again_at if result else None,
                result=result.result if result else None,
                progress=result.progress if result else None,
            )
        except HandlerFailed as failed:
            m.handler_errors.inc()
            outcome = Failure(message, failed.error, permanent=failed.permanent)
        except Exception as error:  # a bug outside the handler: never strand the message
            m.handler_errors.inc()
            trace = traceback.format_exc()
            outcome = Failure(message, f"worker error: {error!r}\n{trace[-MAX_ERROR_TEXT:]}")
        except asyncio.CancelledError:
            reason = running.stop_reason
            if reason is None:
                raise
            outcome = Failure(message, reason) if running.stop_fails else None
            if outcome is None:
                m.lost.inc()
                log.info(
                    "handler stopped: " + reason,
                    extra={"correlation_id": message.correlation_id, "message_id": message.id},
                )
        finally:
            m.processing_seconds.observe(time.monotonic() - running.started)
        if isinstance(outcome, Failure):
            log.warning(
                "handler failed",
                extra={
                    "correlation_id": message.correlation_id,
                    "message_id": message.id,
                    "error": outcome.error[:500],
                },
            )
        if outcome is not None:
            self._unsettled.append(outcome)
        if outcome is not None or self.stopping.is_set():
            self._outcome_arrived.set()
        self._running.pop(message.id, None)
        self._slot_freed.set()

    # --- settling -----------------------------------------------------------------------------

    async def _settle_loop(self) -> None:
        backoff = Backoff()
        while True:
            if not self._unsettled:
                if self.stopping.is_set() and not self._running and not self._settling:
                    return
                self._outcome_arrived.clear()
                if self.stopping.is_set():  # handlers finishing in the grace period wake us
                    await self._outcome_arrived.wait()
                else:
                    await _wait_any(self._outcome_arrived, self.stopping)
                continue
            if not self.stopping.is_set() and not self._settle_apart:
                await self._sleep(SETTLE_DELAY)  # the next lease may record them
            batch = self._take_unsettled()
            if not batch:
                continue
            self._settling += len(batch)
            try:
                await self._record(batch)
                backoff.reset()
            except (DatabaseUnavailable, sa.exc.DBAPIError) as error:
                self._unsettled[:0] = batch  # keep them: the handlers have run
                self._database_trouble(error)
                await asyncio.sleep(backoff.next())
            finally:
                self._settling -= len(batch)

    async def _record(self, batch: list[Completion | Failure]) -> None:
        """Record outcomes; one that breaks the statement is found by recording them one by
        one, logged and left to its lease's expiry (onLeaseExpired) rather than blocking all."""
        assert self.queue is not None
        try:
            self._count(await asyncio.to_thread(self.queue.settle, self.config.owner, batch))
        except (DatabaseUnavailable, sa.exc.DBAPIError):
            raise
        except Exception:
            for outcome in batch:
                try:
                    settled = await asyncio.to_thread(
                        self.queue.settle, self.config.owner, [outcome]
                    )
                    self._count(settled)
                except (DatabaseUnavailable, sa.exc.DBAPIError):
                    raise
                except Exception:
                    log.exception(
                        "cannot record an outcome; the message waits for its lease to expire",
                        extra={"message_id": outcome.message.id},
                    )
        self._settle_apart = False

    def _take_unsettled(self) -> list[Completion | Failure]:
        batch, self._unsettled = self._unsettled[:SETTLE_BATCH], self._unsettled[SETTLE_BATCH:]
        return batch

    def _count(self, settled: Settled) -> None:
        for outcome, count in (
            ("processed", settled.processed + settled.deleted),
            ("rescheduled", settled.rescheduled),
            ("retrying", settled.retrying),
            ("errored", settled.errored),
            ("requeued", settled.requeued_newer_version),
            ("lost", settled.lease_lost),
        ):
            if count:
                self._metrics.messages.labels(outcome=outcome, queue=self.config.queue).inc(count)

    # --- leases held ------------------------------------------------------------------------

    def _held_ids(self) -> list[int]:
        settling = [o.message.id for o in self._unsettled]
        return [m.id for m in self._buffer] + list(self._running) + settling

    async def _keep_leases(self) -> None:
        assert self.queue is not None and self.config.lease_seconds
        extend_every = min(max(self.config.lease_seconds / 3, 0.5), 300.0)
        last_extended = time.monotonic()
        # Not ended by `stopping`: handlers finishing in the grace period keep their leases (and
        # still learn of cancellation) until _shut_down cancels this task.
        while True:
            await asyncio.sleep(min(CANCEL_CHECK_SECONDS, extend_every))
            extend = time.monotonic() - last_extended >= extend_every
            ids = self._held_ids() if extend else list(self._running)
            if not ids:
                continue
            try:
                if extend:
                    still = await asyncio.to_thread(
                        self.queue.extend, self.config.owner, ids, self.config.lease_seconds
                    )
                    last_extended = time.monotonic()
                else:
                    still = await asyncio.to_thread(self.queue.held, self.config.owner, ids)
            except (DatabaseUnavailable, sa.exc.DBAPIError) as error:
                self._database_trouble(error)
                continue
            for lost in set(ids) - still:
                self._lose(lost)

    async def _enforce_time_limit(self) -> None:
        """Cancel handlers past executionTimeoutSeconds: one timer for all of them, sleeping
        until the oldest running handler's deadline (a timeout per message costs more)."""
        limit = self.config.execution_timeout
        assert limit
        while True:
            now = time.monotonic()
            for running in list(self._running.values()):
                if running.stop_reason is None and now - running.started >= limit:
                    running.stop_reason = f"execution time limit of {limit:g}s exceeded"
                    running.stop_fails = True
                    self._metrics.timeout_errors.inc()
                    running.task.cancel()
            starts = [r.started for r in self._running.values() if r.stop_reason is None]
            if starts:
                await asyncio.sleep(max(min(starts) + limit - time.monotonic(), 0.001))
            else:
                self._first_started.clear()
                await self._first_started.wait()

    def _lose(self, message_id: int) -> None:
        """The message was cancelled or its lease swept: stop its handler, forget it."""
        running = self._running.get(message_id)
        if running is not None:
            running.stop_reason = "lease lost (message cancelled or lease expired)"
            running.task.cancel()
            return
        for message in list(self._buffer):
            if message.id == message_id:
                self._buffer.remove(message)
                self._metrics.lost.inc()

    async def _sweep_loop(self) -> None:
        assert self.queue is not None
        while not self.stopping.is_set():
            try:
                swept = await asyncio.to_thread(self.queue.sweep)
                if swept.abandoned or swept.retried or swept.errored or swept.expired:
                    log.info("swept", extra=swept.__dict__)
            except (DatabaseUnavailable, sa.exc.DBAPIError) as error:
                self._database_trouble(error)
            await self._sleep(self.config.sweep_interval)

    async def _vacuum_loop(self) -> None:
        assert self.queue is not None
        pause = self.config.vacuum_interval
        while not self.stopping.is_set():
            await self._sleep(pause)
            try:
                vacuumed = await asyncio.to_thread(self.queue.vacuum)
            except (DatabaseUnavailable, sa.exc.DBAPIError) as error:
                self._database_trouble(error)
                continue
            if vacuumed:
                log.info("vacuumed the queue table")
                # Dead rows that an old transaction still sees survive a vacuum: back off.
                pause = min(pause * 2, 60.0)
            else:
                pause = self.config.vacuum_interval

    # --- stopping -----------------------------------------------------------------------------

    async def _shut_down(self) -> None:
        assert self.queue is not None
        # A lease statement may be under way: let it finish so what it leased is released below.
        lease_loop = next(t for t in self._tasks if t.get_name() == "lease")
        await asyncio.wait([lease_loop], timeout=self.config.grace_period)
        unstarted = [m.id for m in self._buffer]
        self._buffer.clear()
        if unstarted:
            await self._retrying(lambda: self.queue.release(self.config.owner, unstarted))  # type: ignore[union-attr]
            metrics.worker_messages.labels(outcome="released", **self._labels).inc(len(unstarted))
            log.info("released unstarted messages", extra={"count": len(unstarted)})
        running = [r.task for r in self._running.values()]
        if running:
            log.info("waiting for running handlers", extra={"count": len(running)})
            _, late = await asyncio.wait(running, timeout=self.config.grace_period)
            for r in list(self._running.values()):
                if r.task in late:
                    r.stop_reason = (
                        f"worker stopped after its grace period of {self.config.grace_period:g}s"
                    )
                    r.stop_fails = True
                    r.task.cancel()
            if late:
                await asyncio.wait(late)
        settler = next(t for t in self._tasks if t.get_name() == "settle")
        self._outcome_arrived.set()
        await settler
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.handler.close()
        log.info("worker stopped")

    async def _retrying(self, call: Callable[[], T]) -> T:
        backoff = Backoff()
        while True:
            try:
                return await asyncio.to_thread(call)
            except (DatabaseUnavailable, sa.exc.DBAPIError) as error:
                self._database_trouble(error)
                await asyncio.sleep(backoff.next())

    # --- helpers ------------------------------------------------------------------------------

    def _database_trouble(self, error: BaseException) -> None:
        self.ready = False
        metrics.worker_errors.labels(kind="database", **self._labels).inc()
        log.warning("database unavailable", extra={"error": str(error).splitlines()[0][:300]})

    async def _sleep(self, seconds: float, wake: asyncio.Event | None = None) -> None:
        events = [self.stopping] + ([wake] if wake is not None else [])
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(_wait_any(*events), timeout=seconds)


async def _wait_any(*events: asyncio.Event) -> None:
    waiters = [asyncio.create_task(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


class _Metrics:
    """The worker's metric series of one queue, labelled once (labels() costs per call)."""

    def __init__(self, queue: str) -> None:
        self.messages = metrics.worker_messages
        self.lost = metrics.worker_messages.labels(outcome="lost", queue=queue)
        self.queue_latency = metrics.worker_queue_latency_seconds.labels(queue=queue)
        self.processing_seconds = metrics.worker_processing_seconds.labels(queue=queue)
        self.lease_batches = metrics.worker_lease_batches.labels(queue=queue)
        self.timeout_errors = metrics.worker_errors.labels(kind="timeout", queue=queue)
        self.handler_errors = metrics.worker_errors.labels(kind="handler", queue=queue)


class Backoff:
    """Exponential back-off with full jitter, capped, for a database that went away."""

    def __init__(self, first: float = 0.2, cap: float = MAX_BACKOFF_SECONDS) -> None:
        self.first, self.cap, self.attempt = first, cap, 0

    def next(self) -> float:
        self.attempt += 1
        return random.uniform(self.first, min(self.cap, self.first * 2**self.attempt))

    def reset(self) -> None:
        self.attempt = 0
