"""W3C trace context (`traceparent`, `tracestate`, `baggage`) carried in a message's headers.

Enqueueing puts the caller's current OpenTelemetry context into the headers of each message that
has no `traceparent` of its own (`current_headers`, `with_context`); the API does the same with
the `traceparent` of the enqueue request (`headers_from`). The worker reads it back (`extract`)
to make its spans children of the enqueue and to pass the context on to the handler. Headers
are matched by their lowercase W3C names. Without a current span, or without a trace context in
the headers, each of these is a lookup or two: nothing is parsed or allocated.

OpenTelemetry's API is optional here (the worker and api extras bring it, `pip install
tablequeue` does not): without it there is no trace context to carry, and headers pass as they are.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .extras import installed

if TYPE_CHECKING:
    from opentelemetry.context import Context

TRACEPARENT = "traceparent"


@functools.cache
def available() -> bool:
    """Whether OpenTelemetry's API is installed (looked up once, not imported)."""
    return installed("opentelemetry.propagate")


def _valid(context: Context | None) -> bool:
    from opentelemetry import trace

    return trace.get_current_span(context).get_span_context().is_valid


def current_headers(context: Context | None = None) -> dict[str, str] | None:
    """The current (or given) OpenTelemetry context as headers, None without a valid span.

    A process that never imported OpenTelemetry's tracing has no current span: then nothing is
    imported (the CLI and the API start as fast as before)."""
    if context is None and "opentelemetry.trace" not in sys.modules:
        return None
    if not _valid(context):
        return None
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=context)
    return carrier or None


def headers_from(carrier: Mapping[str, Any]) -> dict[str, str] | None:
    """A valid trace context found in `carrier` (e.g. HTTP request headers), as message headers,
    normalized; None if there is none or it is malformed."""
    if not isinstance(carrier.get(TRACEPARENT), str) or not available():
        return None
    from opentelemetry import propagate

    return current_headers(propagate.extract(carrier))


def with_context(
    headers: dict[str, Any] | None, context_headers: dict[str, str] | None
) -> dict[str, Any] | None:
    """`headers` plus the trace context, unless they carry a `traceparent` already."""
    if not context_headers or (headers and TRACEPARENT in headers):
        return headers
    return {**headers, **context_headers} if headers else dict(context_headers)


def extract(headers: Any) -> Context | None:
    """The trace context of a message's headers, None if there is none or it is malformed."""
    if not isinstance(headers, dict) or not isinstance(headers.get(TRACEPARENT), str):
        return None
    if not available():
        return None
    from opentelemetry import propagate

    carrier = {k: v for k, v in headers.items() if isinstance(v, str)}
    context = propagate.extract(carrier)
    return context if _valid(context) else None


def attach_from(headers: Any) -> object | None:
    """Make the trace context of a message's headers current (until `detach`); None, and
    nothing imported, when the headers carry none."""
    context = extract(headers)
    if context is None:
        return None
    from opentelemetry import context as otel_context

    return otel_context.attach(context)


def detach(token: object) -> None:
    from opentelemetry import context as otel_context

    otel_context.detach(token)  # type: ignore[arg-type]
