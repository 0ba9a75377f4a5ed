"""Failures: handler errors, time limits, outcomes no database can store, cancellation."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.support.waiting import wait_until

from .helpers import ASYNC, FAST_POLL, SYNC, MakeQueue, StartWorker, counter, enqueue, events

# --- time limits ------------------------------------------------------------------------------


def test_execution_timeout_is_a_failure_retried_per_max_attempts(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", max_attempts=2, retry={"delay_seconds": 0, "jitter": 0})
    [slow] = enqueue(queue, [{"sleep": 60}])
    worker = start_worker("orders", db_url, ASYNC, "--execution-timeout", "0.5", *FAST_POLL)
    wait_until(lambda: queue.get(slow).status == "Error", timeout=30)
    message = queue.get(slow)
    assert message.attempts == 2
    assert message.last_error == "execution time limit of 0.5s exceeded"
    assert events(records, "cancelled") == [slow, slow]  # the handler was stopped both times
    assert events(records, "done") == []
    timeouts = ("tablequeue_worker_errors_total", "timeout")
    assert counter(worker, timeouts[0], kind=timeouts[1], queue="orders") == 2


def test_sync_handler_that_hangs_past_the_limit_does_not_block_the_worker_from_exiting(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    # A thread cannot be stopped: the message fails at the limit, and SIGTERM still ends the
    # worker after its grace period although the handler's thread is still running.
    queue = make_queue("orders")
    [hung] = enqueue(queue, [{"hang": True}])
    worker = start_worker(
        "orders", db_url, SYNC, "--execution-timeout", "0.5", "--grace-period", "1", *FAST_POLL
    )
    wait_until(lambda: queue.get(hung).status == "Error", timeout=30)
    assert queue.get(hung).last_error == "execution time limit of 0.5s exceeded"
    [other] = enqueue(queue, [{"n": 1}])
    wait_until(lambda: other in events(records, "done"), timeout=30)
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(timeout=20) == 0
    assert events(records, "done") == [other]


# --- outcomes no database can store -----------------------------------------------------------


def test_outcomes_no_database_can_store_fail_their_message_and_block_nothing(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker
) -> None:
    queue = make_queue("orders", keep_processed_for="1h", max_attempts=1)
    [nan] = enqueue(queue, [{"nan_result": True}])
    [nul] = enqueue(queue, [{"nul_error": True}])
    fine = enqueue(queue, [{"n": n} for n in range(20)])
    start_worker("orders", db_url, ASYNC, *FAST_POLL)
    wait_until(lambda: queue.count(status="Processed") == 20, timeout=30)
    wait_until(lambda: queue.count(status="Error") == 2, timeout=30)
    assert "invalid result" in (queue.get(nan).last_error or "")
    assert "NUL \\x00 in the error text" in (queue.get(nul).last_error or "")
    assert {m.id for m in queue.messages(status="Processed")} == set(fine)


# --- cancellation -----------------------------------------------------------------------------


def test_cancelling_a_message_stops_its_running_handler(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")
    [running, other] = enqueue(queue, [{"sleep": 60}, {"sleep": 0.2}])
    worker = start_worker("orders", db_url, ASYNC, *FAST_POLL)
    wait_until(lambda: running in events(records, "start"), timeout=30)
    queue.cancel(queue.get(running).tracking_id)
    wait_until(lambda: running in events(records, "cancelled"), timeout=30)
    wait_until(
        lambda: [
            line
            for line in worker.logs()
            if line["message"].startswith("handler stopped: lease lost")
            and line.get("message_id") == running
        ],
        timeout=30,
    )
    wait_until(lambda: queue.get(other).status == "Processed", timeout=30)
    assert queue.get(running).status == "Cancelled"
    assert running not in events(records, "done")
    assert counter(worker, "tablequeue_worker_messages_total", outcome="lost", queue="orders") == 1


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the worker's, not the engine's
def test_a_sync_handler_sees_its_context_cancelled_at_the_time_limit_and_on_cancel(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    """A thread cannot be stopped: `context.cancelled` tells a sync handler to stop, at its
    time limit and when a person cancels its message; it returns, and its slot frees."""
    handler = "python:tests.support.worker_handlers:handle_until_cancelled"
    limited_queue = make_queue("orders", max_attempts=1)
    [limited] = enqueue(limited_queue, [{"n": 1}])
    start_worker("orders", db_url, handler, "--execution-timeout", "1", *FAST_POLL)
    cancelled_queue = make_queue("mail", max_attempts=1)
    [cancelled] = enqueue(cancelled_queue, [{"n": 2}])
    start_worker("mail", db_url, handler, "--concurrency", "1", *FAST_POLL)

    wait_until(lambda: limited in events(records, "cancelled"), timeout=30)
    wait_until(lambda: limited_queue.get(limited).status == "Error", timeout=30)
    assert limited_queue.get(limited).last_error == "execution time limit of 1s exceeded"

    wait_until(lambda: cancelled in events(records, "start"), timeout=30)
    cancelled_queue.cancel(cancelled_queue.get(cancelled).tracking_id)
    wait_until(lambda: cancelled in events(records, "cancelled"), timeout=30)
    assert cancelled_queue.get(cancelled).status == "Cancelled"
    [after] = enqueue(cancelled_queue, [{"n": 3}])  # its one slot is free again
    wait_until(lambda: after in events(records, "start"), timeout=30)
    assert events(records, "done") == []
