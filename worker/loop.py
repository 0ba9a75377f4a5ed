"""The worker loop: lease in batches, run up to `concurrency` handlers, settle outcomes in batches.

Tasks of one worker process, all on one asyncio loop (database calls run in threads):
- lease loop (here): leases `batch_size` when no leased message waits and a handler slot is
  free, recording the outcomes finished so far in the same transaction; polls with adaptive
  delay (full batch: again at once; empty: back off to `poll_max`), woken early by
  LISTEN/NOTIFY on PostgreSQL;
- settler (`settling`): records outcomes the lease loop did not take within SETTLE_DELAY;
- lease keeper and time-limit watchdog (`leases`);
- sweeper and vacuum (`housekeeping`);
- heartbeats in `tablequeue_workers` (`heartbeat`).
After a lease that failed with a database error, the lease loop first gives back what that lease
may have taken unheard (`recovery`).
The handlers run as tasks of their own (`held`; a coroutine handler gets its task only once it
waits for something; a batch handler's call is one task for its messages, `batches`).
An HTTP handler's worker leases only while its app answers (`appgate`): a request that could
not reach the app gives its message back, with the unstarted ones, until the app answers again.
On SIGTERM: stop leasing, give back unstarted messages, let running handlers finish within the
grace period, record everything, set `drained` (`GET /drained` answers then), exit 0.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from tablequeue import Database, Queue, listen_url, metrics
from tablequeue.errors import QueueNotFound
from tablequeue.models import LeaseBatch

from .appgate import AppGate
from .config import WorkerConfig
from .database_health import DATABASE_ERRORS, DatabaseHealth, database_backoff
from .handlers import HttpHandler, PythonHandler
from .heartbeat import Heartbeats
from .held import HeldMessages
from .housekeeping import (
    AuditRetention,
    fire_schedules_every,
    purge_every,
    sweep_every,
    vacuum_when_bloated,
)
from .leases import LeaseKeeper
from .metrics import WorkerMetrics
from .progress_route import ProgressRoute
from .recovery import LostLeases
from .rollup import Rollup
from .settling import Settlement
from .waiting import sleep_unless

if TYPE_CHECKING:
    from tablequeue.backoff import Backoff

    from .tracing import Tracing

log = logging.getLogger("tablequeue.worker")
NOTIFY_COALESCE = 0.010
"""Seconds after its previous lease began that a worker woken by a notification waits before
it leases again. At a moderate rate every enqueue's NOTIFY would otherwise cost a lease of one
message: at 500 messages/s that was 810 µs of worker CPU a message, 340 with this wait (p50
latency 1.0 -> 6.6 ms, p99 3.4 -> 11.5 ms; bench/results/wakeups-2026-11-29.md). A worker with
full batches, or woken after a quiet spell of this long, does not wait."""
SHUTDOWN_MARGIN = 5.0
"""Seconds past the grace period the shutdown's last database work (giving back, recording
outcomes, removing the heartbeat) may take: within the 10 s the pod's termination grace period
adds to the worker's."""
EXIT_CUT_SHORT = 1
"""The exit code of a shutdown cut short: something is left to lease expiry."""
QUEUE_NOT_THERE: tuple[type[Exception], ...] = (*DATABASE_ERRORS, QueueNotFound)
"""Opening the queue waits for the database and for the queue to be applied."""


def _throttle(seconds: float, longest: float) -> float:
    """How long to wait for the rate limit's next token: a little past it (other workers take
    turns too), never longer than the longest poll delay."""
    return min(max(seconds * 1.05, 0.01), longest)


class Worker:
    """One worker process: opens its queue, then orchestrates leasing, handlers, settling, lease
    keeping and housekeeping until stopped."""

    def __init__(
        self,
        config: WorkerConfig,
        database: Database,
        handler: HttpHandler | PythonHandler,
        tracing: Tracing | None = None,
    ) -> None:
        self.config = config
        self.tracing = tracing
        self.progress = ProgressRoute(config.owner)
        self.database = database
        self.handler = handler
        self.health = DatabaseHealth(config.queue)
        self.metrics = WorkerMetrics(config.queue)
        self.stopping = asyncio.Event()
        self.drained = asyncio.Event()
        """Stopped, and the shutdown is done with the handlers (`GET /drained`)."""
        self.gate: AppGate | None = None
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._paused = False
        self._leased_at = 0.0
        """When the last lease began (the loop's clock)."""
        self._in_flight = metrics.worker_in_flight.labels(queue=config.queue)
        self.cut_short = False
        """The shutdown ran out of its budget (`EXIT_CUT_SHORT`): threads may still wait on
        the database, and only ending the process ends them."""

    @property
    def ready(self) -> bool:
        return self.unready() is None

    def unready(self) -> str | None:
        """Why `/readyz` answers 503 (the database, stopping, the app not answering); None:
        ready."""
        if not self.health.ready:
            return "stopping" if self.stopping.is_set() else "the database does not answer"
        if self.gate is not None and not self.gate.is_open:
            return self.gate.reason
        return None

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=32))
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        opened = await self._open_queue()
        if opened is None:
            return 0  # stopped before the database could be reached
        queue, started = opened
        config = self.config
        config.resolve(queue)
        http = self.handler if isinstance(self.handler, HttpHandler) else None
        gate = self.gate = AppGate(http, config.app_check_path, on_close=self._wake.set)
        log.info("worker started", extra=self._describe())
        rollup = Rollup(self.database, queue, config.rollup_interval)
        settlement = Settlement(
            queue, config.owner, self.health, self.metrics, rollup, self.tracing
        )
        await rollup.write()  # the first samples, before this worker takes anything away
        held = HeldMessages(
            self.handler,
            self.database,
            queue,
            settlement,
            self.metrics,
            config.owner,
            self.tracing,
            gate,
        )
        self.progress.attach(queue, held, self.health)
        lost = LostLeases(queue, config.owner, started, held, settlement, self.metrics)
        self._in_flight.set_function(lambda: len(held.running))
        keeper = LeaseKeeper(queue, config.owner, held, settlement, self.health, self.metrics)
        heartbeats = Heartbeats(
            self.database,
            config.queue,
            config.owner,
            config.heartbeat_interval,
            lambda: len(held.running),
            lambda: (self.metrics.processed, self.metrics.failed),
        )
        heartbeats.start()
        assert config.lease_seconds
        # The worker's services: each runs as one task until the worker stops, or is left out
        # (None) when its option is off. A new background duty is one more line here.
        services: list[tuple[str, Coroutine[Any, Any, Any] | None]] = [
            ("lease", self._lease_loop(queue, settlement, held, rollup, lost)),
            ("settle", settlement.flush_on_time(self.stopping)),
            ("keep", keeper.keep(config.lease_seconds)),
            ("sweep", sweep_every(config.sweep_interval, queue, self.health, self.stopping)),
            (
                "schedules",
                fire_schedules_every(config.schedule_interval, queue, self.health, self.stopping),
            ),
            (
                "purge",
                purge_every(
                    config.purge_interval,
                    queue,
                    config.owner,
                    AuditRetention(self.database, timedelta(days=config.keep_audit_days)),
                    self.health,
                    self.stopping,
                ),
            ),
            (
                "vacuum",
                vacuum_when_bloated(config.vacuum_interval, queue, self.health, self.stopping),
            ),
            ("app gate", gate.watch(self.stopping) if gate.check_url is not None else None),
            ("rollup", rollup.write_every(self.stopping) if rollup.enabled else None),
            (
                "time limit",
                keeper.enforce_time_limit(config.execution_timeout)
                if config.execution_timeout
                else None,
            ),
            ("listen", self._notifications(queue)),
        ]
        self._tasks = [asyncio.create_task(run, name=name) for name, run in services if run]
        lease_loop, settler = self._tasks[:2]
        await self.stopping.wait()
        shutdown = asyncio.create_task(
            self._shut_down(queue, held, settlement, rollup, lost, lease_loop, settler, heartbeats),
            name="shutdown",
        )
        budget = (self.config.grace_period or 0.0) + SHUTDOWN_MARGIN  # resolved: set
        if not (await asyncio.wait([shutdown], timeout=budget))[0]:
            self._cut_short(budget, held.message_ids() + settlement.tracked_ids())
            shutdown.cancel()
            return EXIT_CUT_SHORT
        shutdown.result()
        log.info("worker stopped")
        return 0

    def _cut_short(self, budget: float, leased: list[int]) -> None:
        """The shutdown took its whole budget (the database gone, most often): what it had not
        recorded or given back is left to the leases' expiry, when another worker retries it."""
        self.cut_short = True
        log.error(
            f"shutdown cut after {budget:g} s (the grace period and {SHUTDOWN_MARGIN:g} s): "
            f"{len(leased)} leased messages left to lease expiry, their outcomes unrecorded",
            extra={"message_ids": sorted(set(leased))[:100]},
        )

    def stop(self) -> None:
        if not self.stopping.is_set():
            log.info("stopping: no more leases; running handlers may finish")
        self.health.ready = False
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
            "app_check": self.gate.check_url if self.gate is not None else None,
        }

    async def _open_queue(self) -> tuple[Queue, datetime] | None:
        """The queue, and this process's start by the database clock (before any lease)."""
        backoff = database_backoff()
        while not self.stopping.is_set():
            try:
                queue = await asyncio.to_thread(self.database.queue, self.config.queue)
                started = await asyncio.to_thread(queue.clock)
                self.health.ready = True
                return queue, started
            except QUEUE_NOT_THERE as error:
                self.health.trouble(error)
                await sleep_unless(backoff.next(), self.stopping)
        return None

    def _notifications(self, queue: Queue) -> Coroutine[Any, Any, None] | None:
        """Waking the lease loop on NOTIFY, where the engine has it and it is wanted."""
        dialect, url = self.database.dialect, self.database.url
        if self.config.listen_db:  # checked when the worker started (`main.run`)
            dialect, url = listen_url(self.config.listen_db, dialect)
        if not (self.config.listen and dialect.capabilities.notifies):
            return None
        return dialect.listen(url, queue.table.name, self._wake)

    async def _lease_loop(
        self,
        queue: Queue,
        settlement: Settlement,
        held: HeldMessages,
        rollup: Rollup,
        lost: LostLeases,
    ) -> None:
        config = self.config
        assert config.batch_size and config.concurrency
        delay = self._poll_bounds()[0]
        backoff = database_backoff()
        while not self.stopping.is_set():
            await held.wait_for_slot(config.concurrency, self.stopping)
            if self.stopping.is_set():
                return
            if held.unreached or not (gate := self._gate()).is_open:
                await self._give_back_unreached(queue, held, rollup)
                if not gate.is_open:  # the next lease once the app answers
                    await gate.wait_open(self.stopping)
                    continue
            if not held.waiting:
                batch = await self._lease(settlement, held, rollup, lost, backoff)
                if batch is None:
                    continue
                delay, waited = await self._pace(batch, delay, queue, held, settlement)
                if waited:
                    continue
            held.start_waiting(config.concurrency, self.stopping)
            if delay and not held.waiting:
                await self._wait_for_work(delay)

    async def _wait_for_work(self, delay: float) -> None:
        """Wait `delay` before the next lease, or less when a notification wakes the worker:
        then until NOTIFY_COALESCE after the last lease began."""
        await sleep_unless(delay, self.stopping, self._wake)
        if not self._wake.is_set() or self.stopping.is_set():
            return
        wait = self._leased_at + NOTIFY_COALESCE - asyncio.get_running_loop().time()
        if wait > 0:
            await asyncio.sleep(wait)

    def _gate(self) -> AppGate:
        assert self.gate is not None, "made before the lease loop starts"
        return self.gate

    async def _give_back_unreached(self, queue: Queue, held: HeldMessages, rollup: Rollup) -> None:
        """The app did not answer: give back the messages whose request never reached it and,
        while the gate is closed, the leased ones not started (no attempt counted)."""
        ids = held.take_unreached()
        if not self._gate().is_open:
            ids += held.take_unstarted()
        if not ids:
            return
        await self.health.retrying(lambda: queue.release(self.config.owner, ids))
        rollup.given_back(ids)
        self.metrics.app_given_back.inc(len(ids))
        log.info("gave back messages: the app did not answer", extra={"count": len(ids)})

    def _poll_bounds(self) -> tuple[float, float]:
        """The shortest and the longest delay between two leases."""
        return self.config.poll_min or 0.1, self.config.poll_max or 5

    async def _lease(
        self,
        settlement: Settlement,
        held: HeldMessages,
        rollup: Rollup,
        lost: LostLeases,
        backoff: Backoff,
    ) -> LeaseBatch | None:
        """One lease, recording the outcomes finished so far; its messages held. None after a
        database error (backed off already) or when an outcome broke the statement."""
        self._wake.clear()
        self._leased_at = asyncio.get_running_loop().time()
        wanted = self.config.batch_size
        assert wanted
        try:
            await lost.give_back()  # after a failed lease, before the next one
            batch = await settlement.settle_and_lease(wanted, self.config.lease_seconds)
        except DATABASE_ERRORS as error:
            lost.owed = True  # the lease may have committed, its answer lost
            self.health.trouble(error)
            await sleep_unless(backoff.next(), self.stopping)
            return None
        if batch is None:
            return None  # an outcome broke the statement: the settler isolates it
        backoff.reset()
        self.health.ready = True
        if batch.messages:
            self.metrics.lease_batches.inc()
            log.info(
                "leased batch",
                extra={"lease_batch_id": batch.correlation_id, "count": len(batch.messages)},
            )
        held.add(batch.messages)
        rollup.leased(batch.messages)
        self._note_pause(batch.paused)
        return batch

    async def _pace(
        self,
        batch: LeaseBatch,
        delay: float,
        queue: Queue,
        held: HeldMessages,
        settlement: Settlement,
    ) -> tuple[float, bool]:
        """After a lease: the delay before the next one, and whether this round has waited
        already (paused, nothing leased, throttled; or stopping, the queue idle)."""
        config = self.config
        poll_min, poll_max = self._poll_bounds()
        if batch.paused:
            # Enqueues would wake it for nothing: look again after the longest delay.
            await sleep_unless(poll_max, self.stopping)
            return poll_max, True
        if len(batch.messages) == config.batch_size:
            delay = 0.0
        elif batch.messages:
            delay = poll_min
        elif batch.throttled_for is None:
            if batch.at_concurrency_limit:  # waits as on an empty queue: a settle frees a slot
                self.metrics.count_concurrency_limited()
            idle = config.exit_when_idle and not held.running and not settlement
            if idle and await self._nothing_due(queue):
                log.info("queue idle: exiting as asked")
                self.stop()
                return delay, True
            delay = min(max(delay * 2, poll_min), poll_max)
            log.debug("nothing leased", extra={"next_lease_in": delay})
            await self._wait_for_work(delay)
            return delay, True
        if batch.throttled_for is not None:
            # The rate limit: no token before then, whatever is enqueued meanwhile.
            assert config.concurrency
            self.metrics.throttled.inc()
            held.start_waiting(config.concurrency, self.stopping)
            await sleep_unless(_throttle(batch.throttled_for, poll_max), self.stopping)
            return delay, True
        return delay, False

    async def _nothing_due(self, queue: Queue) -> bool:
        """After a lease that took nothing: whether nothing is due either. The lease skips the
        due messages other transactions hold locked (on MariaDB, a sweep's UPDATE locks each
        message it reads for a moment); a read without locks sees them."""
        try:
            due = await asyncio.to_thread(queue.has_due)
        except DATABASE_ERRORS as error:
            self.health.trouble(error)
            return False
        if due:
            log.debug("a due message is locked by another transaction: not idle")
        return not due

    async def _give_back_lost(self, lost: LostLeases) -> None:
        """Stopping after a failed lease: its rows too go back, retrying as the release does."""
        backoff = database_backoff()
        while lost.owed:
            try:
                await lost.give_back()
            except DATABASE_ERRORS as error:
                self.health.trouble(error)
                await asyncio.sleep(backoff.next())

    def _note_pause(self, paused: bool) -> None:
        if paused != self._paused:
            self._paused = paused
            self.metrics.paused.set(1 if paused else 0)
            log.info("queue paused: leasing nothing" if paused else "queue resumed")

    async def _shut_down(
        self,
        queue: Queue,
        held: HeldMessages,
        settlement: Settlement,
        rollup: Rollup,
        lost: LostLeases,
        lease_loop: asyncio.Task[None],
        settler: asyncio.Task[None],
        heartbeats: Heartbeats,
    ) -> None:
        grace = self.config.grace_period
        # A lease statement may be under way: let it finish so what it leased is released below.
        await asyncio.wait([lease_loop], timeout=grace)
        await self._give_back_unreached(queue, held, rollup)
        unstarted = held.take_unstarted()
        if unstarted:
            await self.health.retrying(lambda: queue.release(self.config.owner, unstarted))
            rollup.given_back(unstarted)
            self.metrics.count_released(len(unstarted))
            log.info("released unstarted messages", extra={"count": len(unstarted)})
        # A lease still under way past the grace period: its rows are left to their expiry.
        if lease_loop.done():
            await self._give_back_lost(lost)
        running = [entry.task for entry in held.running.values() if entry.task is not None]
        if running:
            log.info("waiting for running handlers", extra={"count": len(running)})
            _, late = await asyncio.wait(running, timeout=grace)
            for entry in list(held.running.values()):
                if entry.task in late:
                    entry.stop(f"worker stopped after its grace period of {grace:g}s", fails=True)
            if late:
                await asyncio.wait(late)
        await self._give_back_unreached(queue, held, rollup)  # requests that failed meanwhile
        settlement.close()
        await settler
        self.drained.set()  # the handlers are done, their outcomes recorded
        log.info("drained: running handlers done, unstarted messages given back")
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await rollup.write()  # what was counted since the last write, the last outcomes too
        await self.handler.close()
        await heartbeats.stop()
