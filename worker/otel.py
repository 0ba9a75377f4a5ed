"""Whether the worker traces, from the standard OTEL_* environment.

Tracing is on when the environment asks for an exporter (`OTEL_TRACES_EXPORTER=otlp` or
`console`, or an `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT` with the exporter left unset; OTLP over
HTTP/protobuf), or when the application set an SDK tracer provider itself (a Python handler's
module). Off by default: then nothing of OpenTelemetry is imported here.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from tablequeue.errors import InvalidInput
from tablequeue.extras import require

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import TracerProvider as TracerProviderApi

    from .tracing import Tracing


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def provider_from_environment(queue: str) -> TracerProvider | None:
    """The tracer provider the OTEL_* environment asks for (installed as the global one, so a
    Python handler's own spans are exported too), or None: tracing off, the default."""
    if _env("OTEL_SDK_DISABLED").lower() == "true":
        return None
    names = [n.strip().lower() for n in _env("OTEL_TRACES_EXPORTER").split(",") if n.strip()]
    if not names:
        endpoint = _env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or _env("OTEL_EXPORTER_OTLP_ENDPOINT")
        names = ["otlp"] if endpoint else []
    names = [n for n in names if n != "none"]
    if not names:
        return None
    # The SDK is imported only when tracing is on; it is an extra of its own.
    require("the worker's tracing (asked for by the OTEL_* environment)", "otel")
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SpanExporter,
    )

    exporters: list[SpanExporter] = []
    for name in names:
        if name == "otlp":
            protocol = _env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or _env(
                "OTEL_EXPORTER_OTLP_PROTOCOL"
            )
            if protocol not in ("", "http/protobuf"):
                raise InvalidInput(
                    f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: the worker exports OTLP over "
                    "HTTP only (http/protobuf)"
                )
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporters.append(OTLPSpanExporter())
        elif name == "console":
            exporters.append(ConsoleSpanExporter())
        else:
            raise InvalidInput(
                f"OTEL_TRACES_EXPORTER={name}: the worker exports otlp (HTTP), console or none"
            )
    attributes = {"tablequeue.queue": queue}
    if not _env("OTEL_SERVICE_NAME"):
        attributes["service.name"] = "tablequeue-worker"
    provider = TracerProvider(resource=Resource.create(attributes))
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    from opentelemetry import trace

    trace.set_tracer_provider(provider)
    return provider


def application_provider() -> TracerProviderApi | None:
    """The tracer provider the application installed itself, if any."""
    if "opentelemetry.trace" not in sys.modules:
        return None  # nothing imported OpenTelemetry: no provider was set
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return provider


def tracing_for(provider: TracerProviderApi | None, queue: str) -> Tracing | None:
    """The worker's spans through `provider`, or the application's provider; None: off."""
    chosen = provider or application_provider()
    if chosen is None:
        return None
    from .tracing import Tracing

    return Tracing(chosen, queue)
