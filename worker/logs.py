"""Structured JSON logs on stderr: one object per line, with the extra fields of each call.

Every line written while a handler runs, by any logger (the worker's, the handler's own, a
library's), carries that message's `message_id`, `tracking_id`, `lease_batch_id` (the worker's
lease batch) and, when the caller gave them at enqueue, `correlation_id` and `label`; when a
trace context is current, `trace_id` and `span_id`: the worker sets `handling` in the handler's
task (asyncio tasks and the threads of sync handlers copy it), and `MessageFilter`, installed on
the worker's log handler, adds the fields to each record that does not have them already.
Threads a handler starts itself do not inherit it (pass `contextvars.copy_context()` on).
"""

from __future__ import annotations

import contextvars
import logging
import sys
import uuid
from typing import NamedTuple

from tablequeue import json_logs


class Handling(NamedTuple):
    """The message whose handler the current task or thread runs (a tuple: one is made per
    message, and a frozen dataclass costs several times as much to build)."""

    message_id: int
    lease_batch_id: str | None
    tracking_id: uuid.UUID
    correlation_id: str | None
    label: str | None


handling: contextvars.ContextVar[Handling | None] = contextvars.ContextVar(
    "tablequeue_handling", default=None
)


class MessageFilter(logging.Filter):
    """Adds the handled message's ids (and the current trace's) to every record; never drops."""

    def filter(self, record: logging.LogRecord) -> bool:
        current = handling.get()
        fields = record.__dict__
        if current is not None:
            fields.setdefault("message_id", current.message_id)
            fields.setdefault("lease_batch_id", current.lease_batch_id)
            if current.correlation_id is not None:
                fields.setdefault("correlation_id", current.correlation_id)
            if current.label is not None:
                fields.setdefault("label", current.label)
            if "tracking_id" not in fields:
                fields["tracking_id"] = str(current.tracking_id)
        trace = sys.modules.get("opentelemetry.trace")  # not imported: no trace context
        if trace is not None:
            span = trace.get_current_span().get_span_context()
            if span.is_valid:
                fields.setdefault("trace_id", trace.format_trace_id(span.trace_id))
                fields.setdefault("span_id", trace.format_span_id(span.span_id))
        return True


def setup(level: str = "INFO", queue: str | None = None) -> None:
    json_logs.setup(level, {"queue": queue} if queue else None, [MessageFilter()])
