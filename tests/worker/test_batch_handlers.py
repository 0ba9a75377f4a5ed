"""Batch handlers (`@batch_handler`): one call for the messages of a lease, one outcome each;
a raise fails the whole call, a returned exception its message only."""

from __future__ import annotations

from pathlib import Path

from tablequeue import Queue
from tests.support.waiting import wait_until

from .helpers import (
    BATCH,
    BATCH_ASYNC,
    FAST_POLL,
    MakeQueue,
    StartWorker,
    all_messages,
    counter,
    enqueue,
    events,
)

ONE_CALL = ("--batch-size", "10", "--concurrency", "10", *FAST_POLL)
"""Messages enqueued together before the worker starts: one lease, one call."""


def _settled(queue: Queue) -> bool:
    return not any(queue.count(status=s) for s in ("Pending", "Leased"))


def test_one_call_one_outcome_per_message(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h", max_attempts=1)
    bodies = [{"n": 1}, {"result": {"sent": True}}, {"raise": "kaboom"}, {"permanent": "no"}]
    plain, returning, raising, hopeless = enqueue(queue, bodies)
    start_worker("orders", db_url, BATCH, *ONE_CALL)
    wait_until(lambda: _settled(queue), timeout=30)

    assert len(events(records, "batch4")) == 1  # all four in one call
    messages = all_messages(queue)
    assert messages[plain].status == "Processed"
    assert (messages[returning].status, messages[returning].result) == (
        "Processed",
        {"sent": True},
    )
    assert (messages[raising].status, messages[raising].last_error) == (
        "Error",
        "RuntimeError: kaboom",
    )
    assert (messages[hopeless].status, messages[hopeless].last_error) == (
        "Error",
        "PermanentFailure: no",
    )
    assert sorted(events(records, "done")) == sorted([plain, returning])


def test_a_raise_or_a_wrong_count_fails_every_message_of_the_call(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h", max_attempts=1)
    raised = enqueue(queue, [{"n": 1}, {"raise_all": True}, {"n": 2}])
    worker = start_worker("orders", db_url, BATCH, *ONE_CALL)
    wait_until(lambda: _settled(queue), timeout=30)
    for message_id in raised:
        message = queue.get(message_id)
        assert message.status == "Error"
        assert message.last_error and message.last_error.startswith("Traceback")
        assert message.last_error.rstrip().endswith("RuntimeError: the whole call failed")

    miscounted = enqueue(queue, [{"n": 3}, {"wrong_count": True}])  # one transaction: one lease
    wait_until(lambda: _settled(queue), timeout=30)
    for message_id in miscounted:
        message = queue.get(message_id)
        assert message.status == "Error"
        assert message.last_error == (
            "batch handler returned list (3 items); expected a list of 2 outcomes, one per message"
        )
    errors = ("tablequeue_worker_errors_total", "handler")
    wait_until(lambda: counter(worker, errors[0], kind=errors[1], queue="orders") == 5, 30)


def test_time_limit_stops_the_call_and_fails_each_of_its_messages(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h", max_attempts=1)
    ids = enqueue(queue, [{"sleep": 60}, {"sleep": 0}])
    worker = start_worker("orders", db_url, BATCH_ASYNC, "--execution-timeout", "1", *ONE_CALL)
    wait_until(lambda: _settled(queue), timeout=30)
    for message_id in ids:
        message = queue.get(message_id)
        assert (message.status, message.last_error) == (
            "Error",
            "execution time limit of 1s exceeded",
        )
    assert sorted(events(records, "cancelled")) == sorted(ids)
    assert events(records, "done") == []
    errors = "tablequeue_worker_errors_total"
    assert counter(worker, errors, kind="timeout", queue="orders") == 2  # one per message
    assert counter(worker, errors, kind="handler", queue="orders") == 0


def test_a_cancelled_message_loses_its_outcome_the_others_of_the_call_keep_theirs(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")
    cancelled, other = enqueue(queue, [{"sleep": 6}, {"n": 1}])
    worker = start_worker("orders", db_url, BATCH_ASYNC, *ONE_CALL)
    wait_until(lambda: cancelled in events(records, "start"), timeout=30)
    queue.cancel(queue.get(cancelled).tracking_id)
    wait_until(lambda: queue.get(other).status == "Processed", timeout=30)
    assert queue.get(cancelled).status == "Cancelled"
    lost = ("tablequeue_worker_messages_total", "lost")
    wait_until(lambda: counter(worker, lost[0], outcome=lost[1], queue="orders") == 1, 30)
    assert events(records, "cancelled") == []  # the call was not stopped for it


def test_a_call_whose_every_message_lost_its_lease_is_stopped_and_frees_its_slot(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")
    (stuck,) = enqueue(queue, [{"sleep": 3600}])
    one_slot = ("--batch-size", "1", "--concurrency", "1", *FAST_POLL)
    worker = start_worker("orders", db_url, BATCH_ASYNC, *one_slot)
    wait_until(lambda: stuck in events(records, "start"), timeout=30)
    queue.cancel(queue.get(stuck).tracking_id)
    wait_until(lambda: stuck in events(records, "cancelled"), timeout=60)
    (after,) = enqueue(queue, [{"n": 1}])  # the only slot is free again
    wait_until(lambda: queue.get(after).status == "Processed", timeout=60)
    assert queue.get(stuck).status == "Cancelled"
    lost = ("tablequeue_worker_messages_total", "lost")
    assert counter(worker, lost[0], outcome=lost[1], queue="orders") == 1
