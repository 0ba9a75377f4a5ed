"""Enqueue: bodies, order, schedules, identities and versions, default status, expiry,
refused values.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tablequeue import Completion, Database, NewMessage, Queue
from tablequeue.errors import InvalidInput, QueueSpecWarning
from tablequeue.spec import QueueResource
from tests.support.stored import stored_id
from tests.support.waiting import wait_until

from .helpers import MakeQueue, lease_all

SOON = 2.0  # seconds until the scheduled message is due


def test_enqueue_stores_body_headers_priority_and_tracking_id(make_queue: MakeQueue) -> None:
    queue = make_queue()
    body = {"OrderId": "A-1", "Email": "ann@example.com", "Lines": [1, 2], "Ünï": "✓"}
    result = queue.enqueue(body, headers={"traceparent": "00-abc"}, priority=5)
    assert result.outcome == "inserted" and result.status == "Pending"
    stored = queue.get(result.id or 0)
    assert stored.message == body
    assert stored.headers == {"traceparent": "00-abc"}
    assert stored.priority == 5 and stored.version == 1 and stored.attempts == 0
    assert stored.tracking_id == result.tracking_id
    assert stored.process_after <= datetime.now(UTC) + timedelta(seconds=1)


def test_batch_enqueue_keeps_fifo_order(make_queue: MakeQueue) -> None:
    queue = make_queue()
    results = queue.enqueue_many([NewMessage(message={"n": n}) for n in range(2500)])
    ids = [stored_id(r) for r in results]
    assert ids == sorted(ids) and len(set(ids)) == 2500
    leased = queue.lease("w1", 10).messages
    assert [m.message["n"] for m in leased] == list(range(10))


def test_a_batch_of_plain_bodies_is_enqueued_as_bodies(make_queue: MakeQueue) -> None:
    """Issue 44 (left open): plain dicts failed with an AttributeError deep inside."""
    queue = make_queue()
    results = queue.enqueue_many([{"OrderId": "A-1"}, NewMessage(message={"n": 2}), [3], "four"])
    stored = [queue.get(stored_id(r)).message for r in results]
    assert stored == [{"OrderId": "A-1"}, {"n": 2}, [3], "four"]


def test_batch_mixing_every_option_stores_each_message_as_given(make_queue: MakeQueue) -> None:
    """One batch where each option is set on some messages only (PostgreSQL sends each column
    as one typed array, NULL where a message lacks it): each message keeps its own."""
    queue = make_queue()
    hour_later = datetime.now(UTC) + timedelta(hours=1)
    batch = [
        NewMessage(message={"n": 0}),
        NewMessage(message="a JSON string", headers={"h": "1"}, priority=3),
        NewMessage(message=None, message_id="m-2", status="Held"),
        NewMessage(message=[1, "x", None], at=hour_later, expires_after=7200),
        NewMessage(message=5, after=3600, priority=-2, message_id="m-4"),
        NewMessage(message={"n": 5}, expires_at=hour_later + timedelta(hours=1)),
    ]
    results = queue.enqueue_many(batch)
    assert [r.outcome for r in results] == ["inserted"] * 6
    assert [r.message_id for r in results] == [None, None, "m-2", None, "m-4", None]
    assert len({r.tracking_id for r in results}) == 6
    stored = [queue.get(r.id or 0) for r in results]
    assert [m.message for m in stored] == [
        {"n": 0},
        "a JSON string",
        None,
        [1, "x", None],
        5,
        {"n": 5},
    ]
    assert [m.tracking_id for m in stored] == [r.tracking_id for r in results]
    assert [m.headers for m in stored] == [None, {"h": "1"}, None, None, None, None]
    assert [m.priority for m in stored] == [0, 3, 0, 0, -2, 0]
    assert [m.status for m in stored] == [
        "Pending",
        "Pending",
        "Held",
        "Sleeping",
        "Sleeping",
        "Pending",
    ]
    assert [r.status for r in results] == [m.status for m in stored]
    soon = datetime.now(UTC) + timedelta(minutes=30)
    assert [m.process_after > soon for m in stored] == [False, False, False, True, True, False]
    assert [m.expires_at is not None for m in stored] == [False, False, False, True, False, True]
    assert stored[3].expires_at is not None and stored[3].expires_at > hour_later
    assert stored[5].expires_at == hour_later + timedelta(hours=1)


def test_priority_first_then_fifo(make_queue: MakeQueue) -> None:
    queue = make_queue()
    queue.enqueue({"n": "low-1"})
    queue.enqueue({"n": "high"}, priority=10)
    queue.enqueue({"n": "low-2"})
    queue.enqueue({"n": "negative"}, priority=-1)
    order = [m.message["n"] for m in queue.lease("w1", 10).messages]
    assert order == ["high", "low-1", "low-2", "negative"]


def test_scheduled_messages_are_not_leased_early(make_queue: MakeQueue) -> None:
    queue = make_queue()
    later = queue.enqueue({"n": "later"}, at=datetime.now(UTC) + timedelta(hours=1))
    before_soon = time.monotonic()
    soon = queue.enqueue({"n": "soon"}, after=SOON)
    past = queue.enqueue({"n": "past"}, at=datetime.now(UTC) - timedelta(hours=1))
    assert (later.status, soon.status, past.status) == ("Sleeping", "Sleeping", "Pending")
    first = lease_all(queue)
    # `soon` is due no earlier than SOON seconds after `before_soon`; only a lease that surely
    # ran before that may be held to leaving it out (a starved machine can take longer).
    if time.monotonic() - before_soon < SOON:
        assert first == [past.id]
    else:
        assert past.id in first
    leased_later = [] if soon.id in first else wait_until(lambda: lease_all(queue), timeout=20)
    assert sorted(first + leased_later) == sorted([stored_id(past), stored_id(soon)])
    assert queue.get(later.id or 0).status == "Sleeping"


def test_identity_upsert_updates_one_row_and_bumps_version(make_queue: MakeQueue) -> None:
    queue = make_queue(keep_processed_for="forever")
    first = queue.enqueue({"price": 1}, message_id="sku-1")
    [leased] = queue.lease("w1", 10).messages
    queue.complete("w1", [Completion(leased)])
    second = queue.enqueue({"price": 2}, message_id="sku-1")
    assert (first.outcome, second.outcome) == ("inserted", "updated")
    assert second.id == first.id and second.version == 2 and second.status == "Pending"
    stored = queue.get(first.id or 0)
    assert stored.message == {"price": 2}
    assert stored.previous_message == {"price": 1}
    assert queue.count() == 1


def test_same_identity_twice_in_one_batch_applies_in_order(make_queue: MakeQueue) -> None:
    queue = make_queue()
    results = queue.enqueue_many(
        [NewMessage(message={"v": v}, message_id="dup") for v in (1, 2, 3)]
    )
    assert [r.outcome for r in results] == ["inserted", "updated", "updated"]
    [stored] = queue.messages()
    assert stored.message == {"v": 3} and stored.version == 3


def test_a_batch_of_several_statements_keeps_each_outcome_in_order(make_queue: MakeQueue) -> None:
    """A batch longer than one statement (SQLite sends 100 messages per INSERT) with repeated
    messageIds: each message gets its own outcome, repeats apply in order, the rest is FIFO."""
    queue = make_queue(idempotent=True)
    queue.enqueue_many(
        [NewMessage(message={"v": 0}, message_id=f"k-{i}") for i in range(0, 300, 2)]
    )
    batch = [
        NewMessage(message={"v": 0 if i % 4 == 0 else 1}, message_id=f"k-{i}") for i in range(300)
    ]
    batch += [NewMessage(message={"v": 2}, message_id=f"k-{i}") for i in range(0, 300, 3)]
    batch += [NewMessage(message={"n": n}) for n in range(250)]
    results = queue.enqueue_many(batch)
    first = [
        "discarded" if i % 4 == 0 else "updated" if i % 2 == 0 else "inserted" for i in range(300)
    ]
    assert [r.outcome for r in results] == first + ["updated"] * 100 + ["inserted"] * 250
    stored = {m.message_id: m for m in queue.messages(limit=1000) if m.message_id}
    assert len(stored) == 300 and queue.count() == 300 + 250
    for i in range(300):
        message = stored[f"k-{i}"]
        assert message.message == ({"v": 2} if i % 3 == 0 else {"v": 0 if i % 4 == 0 else 1})
        assert message.version == 1 + (i % 4 == 2) + (i % 3 == 0)
    plain = [r.id or 0 for r in results[400:]]
    assert plain == sorted(plain) and len(set(plain)) == 250


def test_idempotent_identical_json_is_discarded_changed_is_processed(
    make_queue: MakeQueue,
) -> None:
    queue = make_queue(idempotent=True)
    queue.enqueue({"a": 1, "b": [1, 2]}, message_id="p-1")
    [leased] = queue.lease("w1", 10).messages
    queue.complete("w1", [Completion(leased)])
    assert queue.get(leased.id).status == "Processed"  # idempotent queues keep processed rows
    same = queue.enqueue({"b": [1, 2], "a": 1}, message_id="p-1")  # same JSON value
    assert same.outcome == "discarded"
    assert queue.get(leased.id).status == "Processed"
    changed = queue.enqueue({"a": 2, "b": [1, 2]}, message_id="p-1")
    assert changed.outcome == "updated" and changed.status == "Pending"
    [again] = queue.lease("w1", 10).messages
    assert again.message == {"a": 2, "b": [1, 2]}
    assert again.previous_message == {"a": 1, "b": [1, 2]}


def test_idempotent_discard_compares_json_text_on_every_engine(make_queue: MakeQueue) -> None:
    queue = make_queue(idempotent=True)
    queue.enqueue({"x": 1}, message_id="m")
    assert queue.enqueue({"x": 1}, message_id="m").outcome == "discarded"
    assert queue.enqueue({"x": 1.0}, message_id="m").outcome == "updated"


def test_default_enqueue_status_applies_and_custom_statuses_are_invisible(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue(default_status="Paused")
    held = queue.enqueue({"n": 1})
    assert held.status == "Paused"
    explicit = queue.enqueue({"n": 2}, status="OnHold")
    assert explicit.status == "OnHold"
    assert lease_all(queue) == []
    database.set_default_status("orders", "Pending")
    ready = queue.enqueue({"n": 3})
    assert lease_all(queue) == [ready.id]
    # Re-applying the unchanged spec keeps the status set at runtime.
    database.apply(QueueResource.from_name("orders", default_status="Paused"))
    assert queue.enqueue({"n": 4}).status == "Pending"


def test_expired_messages_are_never_leased_and_become_expired(make_queue: MakeQueue) -> None:
    queue = make_queue()
    doomed = queue.enqueue({"n": 1}, expires_after=0.2)
    lives = queue.enqueue({"n": 2}, expires_at=datetime.now(UTC) + timedelta(hours=1))
    wait_until(lambda: queue.sweep().expired == 1, timeout=10)
    assert queue.get(doomed.id or 0).status == "Expired"
    assert lease_all(queue) == [lives.id]


def test_expire_after_is_the_default_expiry_counted_from_when_a_message_is_due(
    make_queue: MakeQueue,
) -> None:
    queue = make_queue(expire_after="1h")
    now = datetime.now(UTC)
    tomorrow = now + timedelta(days=1)
    given = now + timedelta(minutes=5)
    plain = queue.enqueue({"n": 1})
    delayed = queue.enqueue({"n": 2}, after=7200)
    at = queue.enqueue({"n": 3}, at=tomorrow)
    own = queue.enqueue({"n": 4}, expires_after=60)
    own_at = queue.enqueue({"n": 5}, expires_at=given)
    clock = queue.clock()  # the database's now: expiry is counted on its clock
    expiry = {e.id: _expires_at(queue, e.id) for e in (plain, delayed, at, own, own_at)}
    hour, slack = timedelta(hours=1), timedelta(minutes=1)
    assert abs(expiry[plain.id] - (clock + hour)) < slack
    assert abs(expiry[delayed.id] - (clock + timedelta(hours=2) + hour)) < slack
    assert expiry[at.id] == tomorrow + hour
    assert abs(expiry[own.id] - (clock + timedelta(minutes=1))) < slack  # the message's own wins
    assert expiry[own_at.id] == given
    plain_queue = make_queue("plain")
    assert plain_queue.get(plain_queue.enqueue({}).id or 0).expires_at is None  # never


def _expires_at(queue: Queue, message_id: int | None) -> datetime:
    expires_at = queue.get(message_id or 0).expires_at
    assert expires_at is not None
    return expires_at


def test_a_message_past_the_default_expiry_becomes_expired(make_queue: MakeQueue) -> None:
    with pytest.warns(QueueSpecWarning, match="maxSeconds 5 is longer than expireAfter 0.2s"):
        queue = make_queue(expire_after="0.2s")
    doomed = queue.enqueue({"n": 1})
    wait_until(lambda: queue.sweep().expired == 1, timeout=10)
    assert queue.get(doomed.id or 0).status == "Expired"
    assert lease_all(queue) == []


@pytest.mark.parametrize(
    "options",
    [
        {"message": {"a": "nul\x00"}},
        {"message": {"key\x00": 1}},
        {"message": {}, "headers": {"h": "\x00"}},
        {"message": {}, "message_id": "id\x00"},
        {"message": {}, "after": 1e12},
        {"message": {}, "expires_after": 1e16},
    ],
)
def test_values_no_engine_can_store_are_rejected_up_front(
    database: Database, make_queue: MakeQueue, options: dict[str, Any]
) -> None:
    queue = make_queue()
    with pytest.raises(ValueError, match=r"NUL|less than or equal"):
        queue.enqueue(**options)
    assert queue.count() == 0
    with pytest.raises(InvalidInput, match="out of range"):
        queue.lease("w1", 1, lease_seconds=1e12)
