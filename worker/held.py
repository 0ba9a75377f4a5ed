"""The messages a worker holds a lease on and has not finished: leased and waiting for a handler
slot, or running their handler. A handler's outcome goes to the settlement."""

from __future__ import annotations

import asyncio
import contextlib
import time
import traceback
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from tablequeue import Database, Queue, trace_context
from tablequeue.models import Completion, Failure, Message

from . import batches, logs, outcomes
from .handlers import (
    MAX_ERROR_TEXT,
    AppUnreachable,
    HandlerContext,
    HandlerFailed,
    HttpHandler,
    PythonHandler,
)
from .metrics import WorkerMetrics
from .running import Running
from .settling import Settlement

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from .appgate import AppGate
    from .tracing import Tracing
from .waiting import wait_any


class HeldMessages:
    """Leased messages waiting for a slot, and the running handlers (at most `concurrency`)."""

    def __init__(
        self,
        handler: HttpHandler | PythonHandler,
        database: Database,
        queue: Queue,
        settlement: Settlement,
        metrics: WorkerMetrics,
        owner: str,
        tracing: Tracing | None = None,
        gate: AppGate | None = None,
    ) -> None:
        self.handler = handler
        self.gate = gate
        self.unreached: list[int] = []
        """Messages whose request never reached the app: to give back, no attempt counted."""
        self.database = database
        self.queue = queue
        self.settlement = settlement
        self.metrics = metrics
        self.owner = owner
        self.tracing = tracing
        self.waiting: deque[Message] = deque()
        """Leased, not started yet."""
        self.running: dict[int, Running] = {}
        self.by_tracking_id: dict[uuid.UUID, Running] = {}
        """The running handlers by their message's tracking id (progress reports)."""
        self._slot_freed = asyncio.Event()
        self.handler_started = asyncio.Event()
        self.batch = isinstance(handler, PythonHandler) and handler.batch
        self._wants_context = isinstance(handler, PythonHandler) and handler.wants_context

    def message_ids(self) -> list[int]:
        return [message.id for message in self.waiting] + list(self.running)

    def add(self, messages: Iterable[Message]) -> None:
        self.waiting.extend(messages)

    def start_waiting(self, concurrency: int, stopping: asyncio.Event) -> None:
        """Start handlers for waiting messages while slots are free (none once stopping: a
        batch leased meanwhile is released), nor while the app does not answer (`appgate`).
        A batch handler gets them in one call."""
        if self.gate is not None and not self.gate.is_open:
            return
        if self.batch:
            self._start_batch(concurrency, stopping)
            return
        while self.waiting and len(self.running) < concurrency and not stopping.is_set():
            message = self.waiting.popleft()
            entry = Running(message, time.monotonic())
            self.running[message.id] = entry
            self.by_tracking_id[message.tracking_id] = entry
            self.handler_started.set()
            # A task from the start: asyncio.timeout, TaskGroup and anyio (httpx) inside the
            # handler need it to be the current task (Python 3.12's eager tasks could save it).
            entry.task = asyncio.create_task(self._handle(message))

    def _start_batch(self, concurrency: int, stopping: asyncio.Event) -> None:
        """One call of the batch handler for as many waiting messages as slots are free."""
        free = min(len(self.waiting), concurrency - len(self.running))
        if free < 1 or stopping.is_set():
            return
        started = time.monotonic()
        entries: list[Running] = []
        for _ in range(free):
            message = self.waiting.popleft()
            entry = Running(message, started, call=entries)
            self.running[message.id] = entry
            self.by_tracking_id[message.tracking_id] = entry
            entries.append(entry)
        handler = self.handler
        assert isinstance(handler, PythonHandler)  # batch handlers are Python's
        task = asyncio.create_task(
            batches.handle(entries, handler, self.metrics, self.tracing, self.finish)
        )
        for entry in entries:
            entry.task = task
        self.handler_started.set()

    def finish(self, entry: Running, outcome: Completion | Failure | None) -> None:
        """A handler's end: its outcome to the settlement, its slot free."""
        message = entry.message
        if self.tracing is not None:
            if outcome is None:
                self.tracing.forget([message.id])
            else:
                self.tracing.finished(message.id)
        if outcome is not None:
            self.settlement.add(outcome)
        self.running.pop(message.id, None)
        self.by_tracking_id.pop(message.tracking_id, None)
        self._slot_freed.set()

    async def wait_for_slot(self, concurrency: int, stopping: asyncio.Event) -> None:
        """Return once fewer than `concurrency` handlers run, or the worker stops."""
        while len(self.running) >= concurrency and not stopping.is_set():
            self._slot_freed.clear()
            await wait_any(self._slot_freed, stopping)

    def take_unstarted(self) -> list[int]:
        """Forget the waiting messages (to give them back); their ids."""
        unstarted = [message.id for message in self.waiting]
        self.waiting.clear()
        if self.tracing is not None:
            self.tracing.forget(unstarted)
        return unstarted

    def take_unreached(self) -> list[int]:
        """Forget the messages whose request never reached the app (to give them back)."""
        unreached, self.unreached = self.unreached, []
        return unreached

    def lose(self, message_id: int) -> None:
        """The message was cancelled or its lease swept: stop its handler, forget it."""
        running = self.running.get(message_id)
        if running is not None:
            running.stop("lease lost (message cancelled or lease expired)", fails=False)
            return
        for message in list(self.waiting):
            if message.id == message_id:
                self.waiting.remove(message)
                self.metrics.lost.inc()
                if self.tracing is not None:
                    self.tracing.forget([message_id])

    async def _handle(self, message: Message) -> None:
        m = self.metrics
        running = self.running[message.id]  # start_waiting registered it before this task ran
        waited = (datetime.now(UTC) - message.process_after).total_seconds()
        m.queue_latency.observe(max(waited, 0.0))
        context = (
            HandlerContext(self.database, self.queue, message, self.owner)
            if self._wants_context
            else None
        )
        # Every log line of the handler's task (and of a sync handler's thread) names the message.
        logs.handling.set(
            logs.Handling(
                message.id,
                message.correlation_id,
                message.tracking_id,
                message.app_correlation_id,
                message.label,
            )
        )
        tracing = self.tracing
        outcome: Completion | Failure | None
        with self._traced(message) as span:
            try:
                result = await self.handler(message, context)
                outcome = outcomes.completion(message, result)
            except HandlerFailed as failed:
                outcome = self._failed(message, failed)
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
                    outcomes.log_stopped(message, reason)
            finally:
                m.processing_seconds.observe(time.monotonic() - running.started)
            if span is not None and tracing is not None and isinstance(outcome, Failure):
                tracing.failed(span, outcome.error)
        if isinstance(outcome, Failure):
            outcomes.log_failed(message, outcome.error)
        self.finish(running, outcome)

    def _traced(self, message: Message) -> contextlib.AbstractContextManager[Span | None]:
        """The trace context current during the call: the handle span when tracing, else the
        message's own (passed on to the app), if it has one."""
        if self.tracing is not None:
            return self.tracing.handling(message)
        if message.headers and trace_context.TRACEPARENT in message.headers:
            return _own_context(message)
        return contextlib.nullcontext()

    def _failed(self, message: Message, failed: HandlerFailed) -> Failure | None:
        """The handler failed: the message's failure; but None when its request never reached
        the app and the worker checks the app's readiness: it is to be given back (no attempt
        counted) and the gate closes."""
        gate = self.gate
        if isinstance(failed, AppUnreachable) and gate is not None and gate.check_url:
            self.unreached.append(message.id)
            gate.app_unreachable(failed.error)
            return None
        self.metrics.handler_errors.inc()
        return Failure(message, failed.error, permanent=failed.permanent)


@contextlib.contextmanager
def _own_context(message: Message) -> Iterator[None]:
    """Tracing off: the message's own trace context, if any, is current during the call."""
    token = trace_context.attach_from(message.headers)
    try:
        yield None
    finally:
        if token is not None:
            trace_context.detach(token)
