"""Tracing: the trace context given at enqueue travels with the message; the worker's spans
(lease, handle, settle) are its children, and the handler runs inside the handle span.

In-process (the worker's loop in the test process, spans kept by an in-memory exporter) and
with real worker processes exporting OTLP over HTTP to a collector the test runs."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tablequeue.database import Database
from tablequeue.models import Completion
from tablequeue.worker import tracing
from tablequeue.worker.config import WorkerConfig
from tablequeue.worker.handlers import load_handler
from tablequeue.worker.main import serve
from tablequeue.worker.tracing import Tracing
from tests.support import otlp_collector, worker_app
from tests.support.api_server import api_client
from tests.support.ports import free_port
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_traces

from .helpers import (
    FAST_POLL,
    MakeQueue,
    StartWorker,
    all_messages,
    enqueue,
    run_failing_worker,
)

TRACED = "python:tests.support.worker_handlers:traced"
STEPS = ("lease orders", "handle orders", "settle orders")


def _ids(span: ReadableSpan | trace.Span) -> tuple[str, str]:
    context = span.get_span_context()
    assert context is not None
    return trace.format_trace_id(context.trace_id), trace.format_span_id(context.span_id)


def _times(span: ReadableSpan) -> tuple[int, int]:
    """A finished span's start and end (ns)."""
    assert span.start_time is not None and span.end_time is not None
    return span.start_time, span.end_time


def _attributes(span: ReadableSpan) -> Mapping[str, Any]:
    assert span.attributes is not None
    return span.attributes


def _parent(span: ReadableSpan) -> str | None:
    return trace.format_span_id(span.parent.span_id) if span.parent is not None else None


def _steps(spans: list[ReadableSpan], message_id: int) -> dict[str, ReadableSpan]:
    mine = [s for s in spans if (s.attributes or {}).get("tablequeue.message.id") == message_id]
    by_name = {span.name: span for span in mine}
    assert sorted(by_name) == sorted(STEPS) and len(mine) == 3, [s.name for s in mine]
    return by_name


def test_one_trace_from_enqueue_to_settle_in_process(
    make_queue: MakeQueue,
    database: Database,
    db_url: str,
    records: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TQ_RECORDS", str(records))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    queue = make_queue("orders", keep_processed_for="1h", max_attempts=1)
    with provider.get_tracer("shop").start_as_current_span("checkout") as checkout:
        ok, failing = enqueue(queue, [{"n": 1}, {"raise": "out of stock"}])
    [untraced] = enqueue(queue, [{"n": 2}])
    given_trace, given_parent = os.urandom(16).hex(), os.urandom(8).hex()
    with provider.get_tracer("shop").start_as_current_span("elsewhere"):  # explicit header wins
        [given] = enqueue(
            queue, [{"n": 3}], headers={"traceparent": f"00-{given_trace}-{given_parent}-01"}
        )
    checkout_trace, checkout_id = _ids(checkout)
    stored = all_messages(queue)
    [header] = stored[ok].headers.values()  # flags: sampled, and "random" on newer SDKs
    assert header.startswith(f"00-{checkout_trace}-{checkout_id}-")
    assert stored[untraced].headers is None

    config = WorkerConfig(
        queue="orders",
        db=db_url,
        handler=TRACED,
        host="127.0.0.1",
        port=free_port(),
        owner="w1",
        exit_when_idle=True,
        poll_min=0.05,
        poll_max=0.5,
    )
    handler = load_handler(config.handler, config.handler_timeout)
    assert asyncio.run(serve(config, database, handler, Tracing(provider, "orders"))) == 0
    assert {m.status for m in all_messages(queue).values()} == {"Processed", "Error"}
    spans = list(exporter.get_finished_spans())
    seen = read_traces(records)  # the context current inside the handler

    for message_id in (ok, failing):
        steps = _steps(spans, message_id)
        for span in steps.values():  # children of the enqueue, in its trace
            assert _ids(span)[0] == checkout_trace and _parent(span) == checkout_id
        handle = steps["handle orders"]
        assert handle.kind == SpanKind.CONSUMER
        assert seen[message_id]["trace_id"] == checkout_trace
        assert seen[message_id]["span_id"] == _ids(handle)[1]
        assert _times(steps["lease orders"])[0] <= _times(handle)[0]
        assert _times(handle)[1] <= _times(steps["settle orders"])[1]
    assert _steps(spans, ok)["handle orders"].status.status_code == StatusCode.UNSET
    failed = _steps(spans, failing)
    assert failed["handle orders"].status.status_code == StatusCode.ERROR
    assert "out of stock" in str(_attributes(failed["handle orders"])["tablequeue.error"])
    assert _attributes(failed["settle orders"])["tablequeue.outcome"] == "failed"
    assert _attributes(_steps(spans, ok)["settle orders"])["tablequeue.outcome"] == "completed"

    # Without a trace context the lease starts a trace; handle and settle are its children.
    steps = _steps(spans, untraced)
    lease_trace, lease_id = _ids(steps["lease orders"])
    assert steps["lease orders"].parent is None and lease_trace != checkout_trace
    for name in ("handle orders", "settle orders"):
        assert _ids(steps[name])[0] == lease_trace and _parent(steps[name]) == lease_id

    for span in _steps(spans, given).values():
        assert _ids(span)[0] == given_trace and _parent(span) == given_parent


def test_http_handler_trace_over_otlp_from_an_api_enqueue(
    make_queue: MakeQueue,
    database: Database,
    db_url: str,
    start_worker: StartWorker,
    app: worker_app.App,
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")
    trace_id, parent = os.urandom(16).hex(), os.urandom(8).hex()
    with otlp_collector.serve() as collector, api_client(database) as client:
        answer = client.post(
            "/queues/orders",
            json={"message": {"status": 200}},
            headers={"traceparent": f"00-{trace_id}-{parent}-01"},
        )
        assert answer.status_code == 201, answer.text
        [result] = answer.json()["results"]
        message_id = result["id"]
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        start_worker("orders", db_url, app.url, *FAST_POLL, env=env)

        def exported() -> dict[str, otlp_collector.ReceivedSpan]:
            return {s.name: s for s in collector.received() if s.trace_id == trace_id}

        wait_until(lambda: set(exported()) == set(STEPS), timeout=60)
    assert queue.get(message_id).headers == {"traceparent": f"00-{trace_id}-{parent}-01"}
    spans = exported()
    for span in spans.values():
        assert span.parent_span_id == parent and span.service == "tablequeue-worker"
        assert span.attributes["tablequeue.message.id"] == message_id
        assert span.attributes["messaging.destination.name"] == "orders"
    handle = spans["handle orders"]
    # The app got the handle span as its parent: one trace id from the API call to the app.
    assert app.headers[message_id]["traceparent"].startswith(f"00-{trace_id}-{handle.span_id}-")


def test_python_handler_spans_over_otlp_from_a_python_enqueue(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")
    provider = TracerProvider()  # the enqueueing application's own tracing
    with provider.get_tracer("shop").start_as_current_span("checkout") as checkout:
        [message_id] = enqueue(queue, [{"n": 1}])
    trace_id, checkout_id = _ids(checkout)
    with otlp_collector.serve() as collector:
        env = {
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{collector.endpoint}/v1/traces",
            "OTEL_SERVICE_NAME": "orders-worker",
        }
        worker = start_worker("orders", db_url, TRACED, *FAST_POLL, env=env)
        wait_until(lambda: queue.get(message_id).status == "Processed", timeout=60)
        worker.signal(15)  # spans still buffered are exported at exit
        assert worker.wait_exit() == 0
    spans = {s.name: s for s in collector.received() if s.trace_id == trace_id}
    assert set(spans) == {*STEPS, "app work"}
    for name in STEPS:
        assert spans[name].parent_span_id == checkout_id
        assert spans[name].service == "orders-worker"
    # The handler's own span is a child of the handle span (the worker's provider is global).
    assert spans["app work"].parent_span_id == spans["handle orders"].span_id
    assert read_traces(records)[message_id]["span_id"] == spans["handle orders"].span_id


def test_tracing_off_passes_the_message_trace_context_on(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, app: worker_app.App
) -> None:
    """Without tracing the worker records nothing, but the app still joins the enqueue's trace;
    a malformed traceparent is not passed on."""
    queue = make_queue("orders", keep_processed_for="1h")
    traceparent = f"00-{os.urandom(16).hex()}-{os.urandom(8).hex()}-01"
    [given] = enqueue(queue, [{}], headers={"traceparent": traceparent, "tracestate": "k=v"})
    [malformed] = enqueue(queue, [{}], headers={"traceparent": "00-abc-def-01"})
    [plain] = enqueue(queue, [{}])
    start_worker("orders", db_url, app.url, *FAST_POLL)
    wait_until(lambda: queue.count(status="Processed") == 3, timeout=30)
    assert app.headers[given]["traceparent"] == traceparent
    assert app.headers[given]["tracestate"] == "k=v"
    assert "traceparent" not in app.headers[malformed] and "traceparent" not in app.headers[plain]


def test_an_exporter_the_worker_lacks_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "jaeger")
    line = run_failing_worker("--db", f"sqlite:///{tmp_path}/x.db", "--handler", TRACED)
    assert (
        line
        == "error: OTEL_TRACES_EXPORTER=jaeger: the worker exports otlp (HTTP), console or none"
    )
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    line = run_failing_worker("--db", f"sqlite:///{tmp_path}/x.db", "--handler", TRACED)
    assert "HTTP only (http/protobuf)" in line


def test_past_the_bound_only_the_oldest_parents_are_dropped(
    make_queue: MakeQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over MAX_FORGOTTEN held parents, the oldest go: the settle spans of the messages leased
    since stay in their enqueue's trace (all of them were dropped before)."""
    monkeypatch.setattr(tracing, "MAX_FORGOTTEN", 2)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    queue = make_queue("orders")
    ids, traces = [], []
    for n in range(3):
        trace_id = os.urandom(16).hex()
        traceparent = f"00-{trace_id}-{os.urandom(8).hex()}-01"
        [one] = enqueue(queue, [{"n": n}], headers={"traceparent": traceparent})
        ids.append(one)
        traces.append(trace_id)
    stored = all_messages(queue)
    spans = Tracing(provider, "orders")
    spans.leased([stored[ids[0]], stored[ids[1]]], 1, 2)
    spans.leased([stored[ids[2]]], 3, 4)  # one over the bound: the first is forgotten
    spans.settled([Completion(stored[i]) for i in ids], 5)
    settle = {
        span.attributes["tablequeue.message.id"]: span
        for span in exporter.get_finished_spans()
        if span.name == "settle orders" and span.attributes is not None
    }
    assert settle[ids[0]].parent is None  # forgotten: a new trace
    for message_id, trace_id in zip(ids[1:], traces[1:], strict=True):
        assert trace.format_trace_id(settle[message_id].context.trace_id) == trace_id
