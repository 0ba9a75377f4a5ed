"""Outcomes: complete, reschedule, fail and retry, new versions while leased, lost leases.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tablequeue import Completion, Failure
from tablequeue.errors import Conflict, InvalidInput
from tests.support.waiting import wait_until

from .helpers import MakeQueue, lease_all


def test_complete_deletes_by_default_and_keeps_when_configured(make_queue: MakeQueue) -> None:
    deleting = make_queue("deleting")
    deleting.enqueue({"n": 1})
    settled = deleting.complete("w1", [Completion(m) for m in deleting.lease("w1", 5).messages])
    assert settled.deleted == 1 and deleting.count() == 0

    keeping = make_queue("keeping", keep_processed_for="7d")
    done = keeping.enqueue({"n": 1}, message_id="k")
    [m] = keeping.lease("w1", 5).messages
    settled = keeping.complete("w1", [Completion(m, result={"ok": True}, progress=100)])
    assert settled.processed == 1
    stored = keeping.get(done.id or 0)
    assert stored.status == "Processed" and stored.processed_at is not None
    assert stored.result == {"ok": True} and stored.progress == 100
    assert stored.previous_message == {"n": 1}
    assert keeping.get_by_tracking_id(str(done.tracking_id)).result == {"ok": True}


def test_progress_reported_while_running_survives_a_completion_without_progress(
    make_queue: MakeQueue,
) -> None:
    queue = make_queue(keep_processed_for="7d")
    done = queue.enqueue(None)  # a JSON null body is a body
    [m] = queue.lease("w1", 5).messages
    queue.report_progress(m.id, {"percent": 50})
    assert queue.complete("w1", [Completion(m)]).processed == 1
    stored = queue.get(done.id or 0)
    assert stored.progress == {"percent": 50} and stored.result is None
    assert stored.message is None and stored.status == "Processed"


def test_progress_under_a_lease_guard(make_queue: MakeQueue) -> None:
    """A worker's progress lands only while its lease (owner and lease batch) holds the row."""
    queue = make_queue(keep_processed_for="7d")
    queue.enqueue({"n": 1})
    [m] = queue.lease("w1", 5).messages
    queue.report_progress(m.id, {"step": 1}, owner="w1", correlation_id=m.correlation_id)
    assert queue.get(m.id).progress == {"step": 1}
    with pytest.raises(Conflict, match="no longer leased by 'w2'"):
        queue.report_progress(m.id, {"step": 2}, owner="w2", correlation_id=m.correlation_id)
    with pytest.raises(Conflict):  # an earlier lease batch of the same worker
        queue.report_progress(m.id, {"step": 2}, owner="w1", correlation_id="older-batch")
    with pytest.raises(InvalidInput):
        queue.report_progress(m.id, float("nan"), owner="w1", correlation_id=m.correlation_id)
    queue.complete("w1", [Completion(m)])
    with pytest.raises(Conflict):  # finished
        queue.report_progress(m.id, {"step": 3}, owner="w1", correlation_id=m.correlation_id)
    assert queue.get(m.id).progress == {"step": 1}


def test_process_again_at_reschedules(make_queue: MakeQueue) -> None:
    queue = make_queue()
    queue.enqueue({"n": 1})
    [m] = queue.lease("w1", 5).messages
    again = datetime.now(UTC) + timedelta(hours=2)
    assert queue.complete("w1", [Completion(m, process_again_at=again)]).rescheduled == 1
    stored = queue.get(m.id)
    assert stored.status == "Sleeping" and stored.attempts == 0
    assert abs((stored.process_after - again).total_seconds()) < 0.01
    assert lease_all(queue) == []


def test_failure_retries_with_backoff_then_errors(make_queue: MakeQueue) -> None:
    queue = make_queue(
        max_attempts=3, retry={"delay_seconds": 0.2, "backoff": "exponential", "jitter": 0}
    )
    queue.enqueue({"n": 1})
    for attempt in (1, 2):
        [m] = wait_until(lambda: queue.lease("w1", 5).messages, timeout=10)
        assert m.attempts == attempt
        assert queue.fail("w1", [Failure(m, f"boom {attempt}")]).retrying == 1
        stored = queue.get(m.id)
        assert stored.status == "Sleeping" and stored.last_error == f"boom {attempt}"
        expected = 0.2 * 2 ** (attempt - 1)
        # Both times come from the one statement's database clock (not the test's wall clock,
        # which a loaded machine can leave far behind): only the engines' rounding separates them.
        delay = (stored.process_after - stored.updated_at).total_seconds()
        assert delay == pytest.approx(expected, abs=0.01)
    [m] = wait_until(lambda: queue.lease("w1", 5).messages, timeout=10)
    assert queue.fail("w1", [Failure(m, "boom 3")]).errored == 1
    assert queue.get(m.id).status == "Error"


def test_permanent_failure_goes_straight_to_error(make_queue: MakeQueue) -> None:
    queue = make_queue(max_attempts=5)
    queue.enqueue({"n": 1})
    [m] = queue.lease("w1", 5).messages
    assert queue.fail("w1", [Failure(m, "bad data", permanent=True)]).errored == 1
    assert queue.get(m.id).status == "Error"


def test_new_version_while_leased_survives_completion_of_the_old(make_queue: MakeQueue) -> None:
    queue = make_queue(keep_processed_for="forever")
    queue.enqueue({"v": 1}, message_id="doc")
    [old] = queue.lease("w1", 5).messages
    update = queue.enqueue({"v": 2}, message_id="doc")
    assert update.status == "Leased" and update.version == 2
    assert lease_all(queue, "w2") == []  # still leased by w1
    settled = queue.complete("w1", [Completion(old)])
    assert settled.requeued_newer_version == 1 and settled.processed == 0
    stored = queue.get(old.id)
    assert stored.status == "Pending" and stored.message == {"v": 2}
    assert stored.previous_message == {"v": 1} and stored.attempts == 0
    [new] = queue.lease("w2", 5).messages
    assert new.message == {"v": 2} and new.version == 2


def test_new_version_while_leased_survives_failure_of_the_old(make_queue: MakeQueue) -> None:
    queue = make_queue()
    queue.enqueue({"v": 1}, message_id="doc")
    [old] = queue.lease("w1", 5).messages
    queue.enqueue({"v": 2}, message_id="doc")
    assert queue.fail("w1", [Failure(old, "boom")]).requeued_newer_version == 1
    stored = queue.get(old.id)
    assert stored.status == "Pending" and stored.message == {"v": 2}


def test_completion_by_a_worker_that_lost_its_lease_changes_nothing(make_queue: MakeQueue) -> None:
    queue = make_queue()
    queue.enqueue({"n": 1})
    [m] = queue.lease("w1", 5).messages
    queue.set_status("Pending", ids=[m.id], force=True)
    [again] = queue.lease("w2", 5).messages
    settled = queue.complete("w1", [Completion(m)])
    assert settled.lease_lost == 1
    assert queue.get(again.id).lease_owner == "w2"


def test_an_outcome_from_an_earlier_lease_of_the_same_worker_changes_nothing(
    make_queue: MakeQueue,
) -> None:
    queue = make_queue(on_lease_expired="Retry", max_attempts=5)
    queue.enqueue({"n": 1})
    [first] = queue.lease("w1", 1, lease_seconds=0.2).messages
    wait_until(lambda: queue.sweep().retried == 1, timeout=10)
    [second] = queue.lease("w1", 1).messages  # the same worker takes it again
    assert queue.fail("w1", [Failure(first, "stale")]).lease_lost == 1
    assert queue.get(first.id).status == "Leased"
    assert queue.complete("w1", [Completion(second)]).deleted == 1


def test_a_holding_status_enqueued_while_leased_applies_at_once(make_queue: MakeQueue) -> None:
    queue = make_queue()
    queue.enqueue({"v": 1}, message_id="doc")
    [old] = queue.lease("w1", 1).messages
    assert queue.enqueue({"v": 2}, message_id="doc", status="OnHold").status == "OnHold"
    assert queue.complete("w1", [Completion(old)]).lease_lost == 1
    stored = queue.get(old.id)
    assert (stored.status, stored.message) == ("OnHold", {"v": 2})


def test_a_failure_leaves_the_previous_version_as_it_was(make_queue: MakeQueue) -> None:
    """Issue 50: `previous_message` is the last body processed; a failed attempt of a newer
    version (retried, or Error at once) leaves it untouched."""
    queue = make_queue(keep_processed_for="forever", max_attempts=3)
    queue.enqueue({"v": 1}, message_id="doc")
    [first] = queue.lease("w1", 5).messages
    assert queue.complete("w1", [Completion(first)]).processed == 1
    queue.enqueue({"v": 2}, message_id="doc")
    [second] = queue.lease("w1", 5).messages
    assert second.message == {"v": 2} and second.previous_message == {"v": 1}
    assert queue.fail("w1", [Failure(second, "try again")]).retrying == 1
    stored = queue.get(first.id)
    assert (stored.message, stored.previous_message) == ({"v": 2}, {"v": 1})
    queue.set_status("Pending", ids=[first.id])  # due now, not after the retry's delay
    [third] = queue.lease("w1", 5).messages
    assert queue.fail("w1", [Failure(third, "bad data", permanent=True)]).errored == 1
    stored = queue.get(first.id)
    assert stored.status == "Error"
    assert (stored.message, stored.previous_message) == ({"v": 2}, {"v": 1})
