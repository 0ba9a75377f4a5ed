"""OpenTelemetry spans of the worker: lease, handle and settle of each message.

Imported only when tracing is on (`otel.tracing_from_environment`); off, the worker creates no
spans, imports no OpenTelemetry module, and reads no headers beyond one lookup of `traceparent`
per message (`held`).

Each message's spans are children of the trace context it was enqueued with (its `traceparent`
header); a message without one starts a trace at its lease span, and its handle and settle spans
are children of that. The handle span is current while the handler runs: a Python handler's own
spans are its children, and an HTTP handler gets it as its `traceparent` header.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterable, Iterator, Sequence

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from tablequeue import trace_context
from tablequeue.models import Completion, Failure, Message

SYSTEM = "tablequeue"
MAX_FORGOTTEN = 100_000
"""Parent contexts kept for messages whose outcome is not recorded yet (a bound, not a limit
of how many messages a worker holds: beyond it the oldest are dropped)."""


class Tracing:
    """Spans of one worker's messages, and each message's parent context until it is settled."""

    def __init__(self, provider: trace.TracerProvider, queue: str) -> None:
        self.tracer = provider.get_tracer("tablequeue.worker")
        self.queue = queue
        self._parents: dict[int, Context] = {}
        self._finished: dict[int, int] = {}
        """Message id -> when its outcome was handed to the settlement (ns)."""

    def _attributes(self, message: Message, operation: str) -> dict[str, str | int]:
        attributes: dict[str, str | int] = {
            "messaging.system": SYSTEM,
            "messaging.destination.name": self.queue,
            "messaging.operation.name": operation,
            "messaging.message.id": str(message.tracking_id),
            "tablequeue.message.id": message.id,
            "tablequeue.tracking_id": str(message.tracking_id),
            "tablequeue.attempt": message.attempts,
        }
        if message.message_id is not None:
            attributes["tablequeue.message_id"] = message.message_id
        if message.correlation_id is not None:
            attributes["tablequeue.lease_batch_id"] = message.correlation_id
        if message.app_correlation_id is not None:
            attributes["tablequeue.correlation_id"] = message.app_correlation_id
        return attributes

    def leased(self, messages: Sequence[Message], start_ns: int, end_ns: int) -> None:
        """One lease span per message, over the lease statement, child of its enqueue context."""
        excess = len(self._parents) + len(messages) - MAX_FORGOTTEN
        for message_id in list(itertools.islice(self._parents, max(excess, 0))):
            del self._parents[message_id]  # the oldest leased (a dict keeps insertion order)
        for message in messages:
            parent = trace_context.extract(message.headers)
            attributes = self._attributes(message, "lease")
            attributes["messaging.batch.message_count"] = len(messages)
            span = self.tracer.start_span(
                f"lease {self.queue}",
                context=parent,
                kind=SpanKind.CLIENT,
                start_time=start_ns,
                attributes=attributes,
            )
            span.end(end_time=end_ns)
            self._parents[message.id] = (
                parent if parent is not None else trace.set_span_in_context(span)
            )

    @contextlib.contextmanager
    def handling(self, message: Message) -> Iterator[Span]:
        """The handle span, current while the handler runs (the caller ends it)."""
        span = self.tracer.start_span(
            f"handle {self.queue}",
            context=self._parents.get(message.id),
            kind=SpanKind.CONSUMER,
            attributes=self._attributes(message, "handle"),
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            yield span
        finally:
            otel_context.detach(token)
            span.end()

    def batch_spans(self, messages: Sequence[Message]) -> list[Span]:
        """A handle span per message of a batch handler's call (the caller ends them). None is
        the current context during the call: the messages may belong to as many traces."""
        return [
            self.tracer.start_span(
                f"handle {self.queue}",
                context=self._parents.get(message.id),
                kind=SpanKind.CONSUMER,
                attributes=self._attributes(message, "handle"),
            )
            for message in messages
        ]

    @staticmethod
    def failed(span: Span, error: str) -> None:
        """The handler failed: the handle span says so."""
        span.set_status(Status(StatusCode.ERROR, error.splitlines()[0][:200] if error else ""))
        span.set_attribute("tablequeue.error", error[:2000])

    def finished(self, message_id: int) -> None:
        """The handler's outcome went to the settlement: the settle span starts now."""
        self._finished[message_id] = time.time_ns()

    def settled(self, outcomes: Iterable[Completion | Failure], end_ns: int) -> None:
        """One settle span per recorded outcome, from the handler's end to the recording."""
        for outcome in outcomes:
            message = outcome.message
            start_ns = self._finished.pop(message.id, end_ns)
            attributes = self._attributes(message, "settle")
            if isinstance(outcome, Failure):
                attributes["tablequeue.outcome"] = "failed"
            elif outcome.process_again_at is not None:
                attributes["tablequeue.outcome"] = "rescheduled"
            else:
                attributes["tablequeue.outcome"] = "completed"
            span = self.tracer.start_span(
                f"settle {self.queue}",
                context=self._parents.pop(message.id, None),
                kind=SpanKind.CLIENT,
                start_time=start_ns,
                attributes=attributes,
            )
            span.end(end_time=end_ns)

    def forget(self, message_ids: Iterable[int]) -> None:
        """Messages given back or lost: no settle span will come."""
        for message_id in message_ids:
            self._parents.pop(message_id, None)
            self._finished.pop(message_id, None)
