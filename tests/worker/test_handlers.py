"""Handlers: the HTTP contract, Python handlers sync and async, the handler context."""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tablequeue.error_text import exception_line
from tablequeue.worker import handlers
from tests.support import worker_app
from tests.support.waiting import wait_until

from .helpers import ASYNC, FAST_POLL, SYNC, MakeQueue, StartWorker, all_messages, enqueue

# --- HTTP handlers ----------------------------------------------------------------------------


def test_http_handler_outcomes(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, app: worker_app.App
) -> None:
    queue = make_queue(
        "orders", keep_processed_for="1h", max_attempts=3, retry={"delay_seconds": 3600}
    )
    again_at = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=123000)
    [failing] = enqueue(queue, [{"status": 500, "text": "the app's database is down"}])
    [hopeless] = enqueue(
        queue, [{"status": 422, "json": {"retry": False, "error": "no such customer"}}]
    )
    [garbled] = enqueue(queue, [{"status": 503, "hex": "ff fe 20 62 75 73 79"}])  # not UTF-8
    [again] = enqueue(
        queue,
        [{"status": 200, "json": {"processAgainAt": again_at.isoformat()}}],
        correlation_id="checkout-1",
        label="Bestellung Müller 100%",
    )
    [result] = enqueue(
        queue,
        [{"status": 200, "json": {"result": {"total": 3}, "progress": {"done": 100}}}],
        message_id="order-1",
        headers={"traceparent": "00-abc-def-01"},
    )
    worker = start_worker("orders", db_url, app.url, *FAST_POLL)
    wait_until(lambda: len(app.payloads()) == 5, timeout=30)
    wait_until(lambda: queue.count(status="Leased") == 0, timeout=30)
    messages = all_messages(queue)

    assert messages[failing].status == "Sleeping" and messages[failing].attempts == 1
    assert messages[failing].last_error == "HTTP 500: the app's database is down"
    assert messages[hopeless].status == "Error" and messages[hopeless].attempts == 1
    assert "no such customer" in (messages[hopeless].last_error or "")
    assert messages[garbled].status == "Sleeping" and messages[garbled].attempts == 1
    assert messages[garbled].last_error == "HTTP 503: \ufffd\ufffd busy"
    assert messages[again].status == "Sleeping"
    assert messages[again].process_after == again_at
    assert messages[result].status == "Processed"
    assert (messages[result].result, messages[result].progress) == ({"total": 3}, {"done": 100})

    [labelled] = [p for p in app.payloads() if p["id"] == again]
    assert (labelled["correlationId"], labelled["label"]) == (
        "checkout-1",
        "Bestellung Müller 100%",
    )
    assert labelled["leaseBatchId"] == messages[again].correlation_id is not None
    assert app.headers[again]["tablequeue-correlation-id"] == "checkout-1"
    assert app.headers[again]["tablequeue-label"] == "Bestellung M%C3%BCller 100%25"
    assert "tablequeue-label" not in app.headers[result]
    [sent] = [p for p in app.payloads() if p["id"] == result]
    stored = messages[result]
    assert sent == {
        "id": result,
        "messageId": "order-1",
        "message": stored.message,
        "previousMessage": None,
        "attempts": 1,
        "headers": {"traceparent": "00-abc-def-01"},
        "correlationId": None,
        "label": None,
        "leaseBatchId": stored.correlation_id,
        "trackingId": str(stored.tracking_id),
        "groupKey": None,
    }
    # A new version of a processed message: the handler gets the body processed before (issue
    # 50), the app's `previousMessage`.
    newer = {"status": 200, "json": {"result": {"total": 4}}}
    assert enqueue(queue, [newer], message_id="order-1") == [result]
    wait_until(lambda: len(app.payloads()) == 6, timeout=30)
    sent_again = [p for p in app.payloads() if p["id"] == result][-1]
    assert (sent_again["message"], sent_again["previousMessage"]) == (newer, stored.message)
    assert worker.process.poll() is None


def test_http_handler_that_is_down_is_a_failure_with_the_readiness_check_off(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker
) -> None:
    """With the check on (the default), the worker waits for the app instead: see
    test_app_lifecycle.py."""
    queue = make_queue("orders")
    [message_id] = enqueue(queue, [{"n": 1}])
    with socket.socket() as taken:  # bound, never listening: connections to it are refused,
        taken.bind(("127.0.0.1", 0))  # and no other free_port() can hand the port out meanwhile
        nobody = f"http://127.0.0.1:{taken.getsockname()[1]}/process"
        start_worker("orders", db_url, nobody, "--app-readiness-path", "off", *FAST_POLL)
        wait_until(lambda: queue.get(message_id).status == "Error", timeout=30)
    error = queue.get(message_id).last_error or ""
    assert f"handler at {nobody} unreachable" in error


# --- Python handlers --------------------------------------------------------------------------


def test_python_handlers_sync_and_async(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    sync_queue = make_queue(
        "sync-orders", keep_processed_for="1h", max_attempts=3, retry={"delay_seconds": 3600}
    )
    async_queue = make_queue("async-orders", keep_processed_for="1h")
    [raising] = enqueue(sync_queue, [{"raise": "kaboom"}])
    [hopeless] = enqueue(sync_queue, [{"permanent": "no such customer"}])
    [returning] = enqueue(sync_queue, [{"outcome": {"result": "sent", "progress": 1}}])
    [async_ok] = enqueue(async_queue, [{"sleep": 0.1, "result": {"ok": True}, "progress": 50}])
    [async_raising] = enqueue(async_queue, [{"raise": "async kaboom"}])
    [async_timed] = enqueue(async_queue, [{"time_box": 0.05}])
    start_worker("sync-orders", db_url, SYNC, *FAST_POLL)
    start_worker("async-orders", db_url, ASYNC, *FAST_POLL)

    def settled() -> bool:  # every message tried once (a retry on sync-orders is an hour off)
        queues = (sync_queue, async_queue)
        return not any(q.count(status=s) for q in queues for s in ("Pending", "Leased"))

    wait_until(settled, timeout=30)

    failed = sync_queue.get(raising)
    assert (failed.status, failed.attempts) == ("Sleeping", 1)  # retried later (maxAttempts 3)
    assert failed.last_error and failed.last_error.startswith("Traceback (most recent call last)")
    _from_the_handler_on(failed.last_error)
    assert exception_line(failed.last_error) == "RuntimeError: kaboom"
    given_up = sync_queue.get(hopeless)
    assert (given_up.status, given_up.attempts) == ("Error", 1)
    assert given_up.last_error == "PermanentFailure: no such customer"
    ok = sync_queue.get(returning)
    assert (ok.status, ok.result, ok.progress) == ("Processed", "sent", 1)

    ok = async_queue.get(async_ok)
    assert (ok.status, ok.result, ok.progress) == ("Processed", {"ok": True}, 50)
    failed = async_queue.get(async_raising)
    assert failed.status == "Error"
    assert failed.last_error and failed.last_error.rstrip().endswith("RuntimeError: async kaboom")
    _from_the_handler_on(failed.last_error)
    assert exception_line(failed.last_error) == "RuntimeError: async kaboom"
    timed = async_queue.get(async_timed)  # its own asyncio.timeout stopped it, nothing else
    assert (timed.status, timed.result) == ("Processed", "timed out")


def _from_the_handler_on(trace: str) -> None:
    """The first frame is the handler's (tests/support/worker_handlers.py), no frame the
    worker's own code that called it."""
    frames = [line for line in trace.splitlines() if line.startswith('  File "')]
    assert frames and "worker_handlers.py" in frames[0], trace
    assert not any(f'"{handlers.__file__}"' in frame for frame in frames), trace


# --- handler context --------------------------------------------------------------------------


def test_python_handler_enqueues_a_follow_up_through_its_context(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    orders = make_queue("orders")
    other = make_queue("other")
    [order] = enqueue(orders, [{"order": "A-1"}])
    start_worker("orders", db_url, "python:tests.support.worker_handlers:follow_up", *FAST_POLL)
    wait_until(lambda: orders.count() == 0, timeout=30)
    [follow] = other.messages()
    assert follow.message == {"followUpOf": order, "order": "A-1"}
    assert follow.message_id == f"follow-up-{order}"
    assert follow.status == "Pending"
