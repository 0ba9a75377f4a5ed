"""The messages a worker holds a lease on and has not finished: leased and waiting for a handler
slot, or running their handler. A handler's outcome goes to the settlement."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
import traceback
import types
import uuid
from collections import deque
from collections.abc import Coroutine, Generator, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tablequeue import trace_context
from tablequeue.database import Database
from tablequeue.models import Completion, Failure, Message
from tablequeue.queue import Queue

from . import batches, logs
from .handlers import MAX_ERROR_TEXT, HandlerContext, HandlerFailed, HttpHandler, PythonHandler
from .metrics import WorkerMetrics
from .settling import Settlement

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from .tracing import Tracing
from .waiting import wait_any

log = logging.getLogger("tablequeue.worker")


@dataclass
class Running:
    message: Message
    started: float
    task: asyncio.Task[None] | None = None
    """The task that runs the handler once it waits for something; None before (`eager`)."""
    stop_reason: str | None = None
    """Why the worker cancelled the handler, if it did."""
    stop_fails: bool = False
    """The stop is the message's failure (time limit, grace period), not a lost lease."""
    shared: bool = False
    """A batch handler's call runs the message with others: a lost lease does not stop it."""

    def stop(self, reason: str, *, fails: bool) -> None:
        """Cancel the handler; `fails`: record the reason as the message's failure. The first
        stop decides (a time limit that fired is the failure even if the lease is lost next).
        A batch call is cancelled only by a failure (all its messages fail); a message whose
        lease is lost meanwhile only loses its outcome, the others' go on."""
        if self.stop_reason is None:
            self.stop_reason = reason
            self.stop_fails = fails
        if self.shared and not fails:
            return
        if self.task is not None:  # None only while it runs, in the same thread: never here
            self.task.cancel()


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
    ) -> None:
        self.handler = handler
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
        self.eager = isinstance(handler, PythonHandler) and handler.is_async and not self.batch
        """Start each handler in the lease loop itself, a task only once it waits for something
        (`start_eagerly`): a coroutine handler that finishes without waiting costs no task."""

    def message_ids(self) -> list[int]:
        return [message.id for message in self.waiting] + list(self.running)

    def add(self, messages: Iterable[Message]) -> None:
        self.waiting.extend(messages)

    def start_waiting(self, concurrency: int, stopping: asyncio.Event) -> None:
        """Start handlers for waiting messages while slots are free (none once stopping: a
        batch leased meanwhile is released). A batch handler gets them in one call."""
        if self.batch:
            self._start_batch(concurrency, stopping)
            return
        while self.waiting and len(self.running) < concurrency and not stopping.is_set():
            message = self.waiting.popleft()
            entry = Running(message, time.monotonic())
            self.running[message.id] = entry
            self.by_tracking_id[message.tracking_id] = entry
            self.handler_started.set()
            if self.eager:
                try:
                    entry.task = start_eagerly(self._handle(message))
                except Exception:  # a bug in `_handle` (it records every handler's failure):
                    # as a task's exception, logged; the message is left to its lease's expiry
                    log.exception("handler task failed", extra={"message_id": message.id})
                    self.running.pop(message.id, None)
                    self.by_tracking_id.pop(message.tracking_id, None)
            else:
                entry.task = asyncio.create_task(self._handle(message))

    def _start_batch(self, concurrency: int, stopping: asyncio.Event) -> None:
        """One call of the batch handler for as many waiting messages as slots are free."""
        free = min(len(self.waiting), concurrency - len(self.running))
        if free < 1 or stopping.is_set():
            return
        started = time.monotonic()
        entries = []
        for _ in range(free):
            message = self.waiting.popleft()
            entry = Running(message, started, shared=True)
            self.running[message.id] = entry
            self.by_tracking_id[message.tracking_id] = entry
            entries.append(entry)
        task = asyncio.create_task(batches.handle(self, entries))
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
        context = HandlerContext(self.database, self.queue, message, self.owner)
        # Every log line of the handler's task (and of a sync handler's thread) names the message.
        logs.handling.set(logs.Handling(message.id, message.correlation_id, message.tracking_id))
        tracing = self.tracing
        # The trace context current during the call: the handle span when tracing, else the
        # message's own (passed on to the app), if it has one.
        traced: contextlib.AbstractContextManager[Span | None]
        if tracing is not None:
            traced = tracing.handling(message)
        elif message.headers and trace_context.TRACEPARENT in message.headers:
            traced = _own_context(message)
        else:
            traced = contextlib.nullcontext()
        outcome: Completion | Failure | None
        with traced as span:
            try:
                result = await self.handler(message, context)
                if result is None:
                    outcome = Completion(message)
                else:
                    outcome = Completion(
                        message, result.process_again_at, result.result, result.progress
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
            if span is not None and tracing is not None and isinstance(outcome, Failure):
                tracing.failed(span, outcome.error)
        if isinstance(outcome, Failure):
            log.warning(
                "handler failed",
                extra={
                    "correlation_id": message.correlation_id,
                    "message_id": message.id,
                    "error": outcome.error[:500],
                },
            )
        self.finish(running, outcome)


def start_eagerly(coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
    """Run `coroutine` now, up to its first wait, in a context of its own (as a task's); then
    a task takes it on from there. None: it finished without waiting (no task needed).

    What Python 3.12's eager tasks do, for 3.11: a task costs its creation and a turn of the
    event loop, more than a handler that does nothing. Until it waits, a coroutine cannot be
    cancelled anyway, so its time limit and lease keeping hold as with a task from the start.
    """
    context = contextvars.copy_context()
    try:
        waits_for = context.run(coroutine.send, None)
    except StopIteration:
        return None
    return asyncio.get_running_loop().create_task(_carry_on(coroutine, waits_for), context=context)


async def _carry_on(coroutine: Coroutine[Any, Any, None], waits_for: Any) -> None:
    await _continued(coroutine, waits_for)


@types.coroutine
def _continued(coroutine: Coroutine[Any, Any, None], waits_for: Any) -> Generator[Any, Any, None]:
    """Drive a started coroutine on from what it waits for (a future, or None for a bare turn
    of the loop), as `await` would: what comes back or is thrown in (a cancellation) goes on
    to it."""
    while True:
        try:
            sent = yield waits_for
        except BaseException as error:  # thrown in (a cancellation): passed on, as await does
            try:
                waits_for = coroutine.throw(error)
            except StopIteration:
                return
        else:
            try:
                waits_for = coroutine.send(sent)
            except StopIteration:
                return


@contextlib.contextmanager
def _own_context(message: Message) -> Iterator[None]:
    """Tracing off: the message's own trace context, if any, is current during the call."""
    token = trace_context.attach_from(message.headers)
    try:
        yield None
    finally:
        if token is not None:
            trace_context.detach(token)
