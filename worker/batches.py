"""Batch handlers (`@batch_handler`): one call for the messages of a lease, one outcome each.

The messages of a call are held as any others (one slot of `concurrency` each, their leases
kept); the call is one task. A time limit or the end of the grace period cancels the call: every
message of it fails with that reason. A message whose lease is lost meanwhile (cancelled,
swept) does not stop the call: its outcome is dropped, the others' are recorded; once all of
its messages have lost their leases, the call is cancelled.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from tablequeue.models import Completion, Failure

from . import outcomes
from .handlers import MAX_ERROR_TEXT, BatchOutcome, HandlerFailed, PythonHandler
from .metrics import WorkerMetrics
from .running import Running

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from .tracing import Tracing

Finish = Callable[[Running, Completion | Failure | None], None]
"""Hands a message's outcome to the settlement (None: its lease was lost)."""


async def handle(
    entries: list[Running],
    handler: PythonHandler,
    m: WorkerMetrics,
    tracing: Tracing | None,
    finish: Finish,
) -> None:
    """Run one call of the batch handler and hand each message's outcome to `finish`."""
    messages = [entry.message for entry in entries]
    now = datetime.now(UTC)
    for message in messages:
        m.queue_latency.observe(max((now - message.process_after).total_seconds(), 0.0))
    spans = tracing.batch_spans(messages) if tracing is not None else []
    try:
        results, stopped_for = await _call(handler, entries, spans)
    finally:
        elapsed = time.monotonic() - entries[0].started
        for _ in entries:
            m.processing_seconds.observe(elapsed)
    each_span: list[Span | None] = [*spans] if spans else [None] * len(entries)
    for entry, result, span in zip(entries, results, each_span, strict=True):
        outcome = _outcome(entry, result, stopped_for, m)
        if span is not None and tracing is not None:
            if isinstance(outcome, Failure):
                tracing.failed(span, outcome.error)
            span.end()
        finish(entry, outcome)


async def _call(
    handler: PythonHandler, entries: list[Running], spans: list[Span]
) -> tuple[list[BatchOutcome], str | None]:
    """The handler's outcome for each message, and why the worker stopped the call (then not
    the handler's error), if it did. A task cancelled from outside ends the spans and raises."""
    messages = [entry.message for entry in entries]
    try:
        return await handler.call_batch(messages), None
    except HandlerFailed as failed:
        return [failed] * len(messages), None
    except Exception as error:  # a bug outside the handler: never strand the messages
        trace = traceback.format_exc()
        failure = HandlerFailed(f"worker error: {error!r}\n{trace[-MAX_ERROR_TEXT:]}")
        return [failure] * len(messages), None
    except asyncio.CancelledError:
        stopped = next((entry for entry in entries if entry.stop_fails), None)
        if stopped is not None and stopped.stop_reason is not None:
            return [HandlerFailed(stopped.stop_reason)] * len(messages), stopped.stop_reason
        if all(entry.stop_reason is not None for entry in entries):
            return [HandlerFailed("lease lost")] * len(messages), None  # each dropped after
        for opened in spans:
            opened.end()
        raise  # not stopped by the worker: the task itself is being cancelled


def _outcome(
    entry: Running, result: BatchOutcome, stopped_for: str | None, m: WorkerMetrics
) -> Completion | Failure | None:
    """One message's outcome of the call; None when its lease was lost while the call ran."""
    message = entry.message
    if entry.stop_reason is not None and not entry.stop_fails:
        m.lost.inc()
        outcomes.log_stopped(message, entry.stop_reason)
        return None
    if isinstance(result, HandlerFailed):
        if stopped_for is None:
            m.handler_errors.inc()
        outcomes.log_failed(message, result.error)
        return Failure(message, result.error, permanent=result.permanent)
    return outcomes.completion(message, result)
