"""Tracking ids the sender chooses (NServiceBus): stored as given, found by them; a malformed
one and one that already names another message (in the queue, or a finished message's kept
outcome) are refused with an error that names it, and nothing is written.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

import uuid

import pydantic
import pytest

from tablequeue import Completion, Database, NewMessage
from tablequeue.errors import InvalidInput, TrackingIdTaken

from .helpers import MakeQueue, lease_all


def _count(database: Database, name: str = "orders") -> int:
    return sum(database.queue(name).stats().counts.values())


def test_a_chosen_tracking_id_is_the_message_s(make_queue: MakeQueue, database: Database) -> None:
    queue = make_queue()
    chosen = uuid.uuid4()
    result = queue.enqueue({"OrderId": "A-1"}, tracking_id=str(chosen))
    assert result.tracking_id == chosen and result.outcome == "inserted"
    found_queue, message = database.find_message(str(chosen))
    assert found_queue.name == "orders" and message.id == result.id
    assert message.tracking_id == chosen
    several = [uuid.uuid4() for _ in range(3)]
    batch = queue.enqueue_many(
        [NewMessage(message={"n": n}, tracking_id=t) for n, t in enumerate(several)]
        + [NewMessage(message={"n": 3})]
    )
    assert [r.tracking_id for r in batch[:3]] == several
    assert batch[3].tracking_id not in several and batch[3].tracking_id is not None


def test_a_malformed_tracking_id_is_refused(make_queue: MakeQueue, database: Database) -> None:
    queue = make_queue()
    with pytest.raises(
        pydantic.ValidationError, match="tracking_id\\n  Input should be a valid UUID"
    ):
        queue.enqueue({"n": 1}, tracking_id="not-a-uuid")
    assert _count(database) == 0


def test_a_tracking_id_another_message_has_is_refused_and_nothing_changes(
    make_queue: MakeQueue, database: Database
) -> None:
    queue = make_queue()
    taken = uuid.uuid4()
    first = queue.enqueue({"n": 1}, tracking_id=taken)
    fresh = uuid.uuid4()
    with pytest.raises(TrackingIdTaken, match=f"trackingId {taken} is taken: message {first.id}"):
        queue.enqueue_many(
            [
                NewMessage(message={"n": 2}, tracking_id=fresh),
                NewMessage(message={"n": 3}, tracking_id=taken),
            ]
        )
    with pytest.raises(TrackingIdTaken, match=str(taken)):  # also under a messageId
        queue.enqueue({"n": 4}, message_id="B-1", tracking_id=taken)
    assert _count(database) == 1
    assert queue.get(first.id or 0).message == {"n": 1}
    with pytest.raises(LookupError):
        database.find_message(str(fresh))  # the batch's other message was not written


def test_an_identity_keeps_its_tracking_id(make_queue: MakeQueue, database: Database) -> None:
    queue = make_queue()
    mine = uuid.uuid4()
    first = queue.enqueue({"v": 1}, message_id="A-1", tracking_id=mine)
    again = queue.enqueue({"v": 2}, message_id="A-1", tracking_id=mine)  # a new version
    assert (again.outcome, again.tracking_id, again.id) == ("updated", mine, first.id)
    other = uuid.uuid4()
    with pytest.raises(TrackingIdTaken, match=f"messageId 'A-1' exists with trackingId {mine}"):
        queue.enqueue({"v": 3}, message_id="A-1", tracking_id=other)
    assert queue.get(first.id or 0).message == {"v": 2}
    with pytest.raises(InvalidInput, match="different trackingIds in one batch"):
        queue.enqueue_many(
            [
                NewMessage(message={"v": 4}, message_id="A-2", tracking_id=uuid.uuid4()),
                NewMessage(message={"v": 5}, message_id="A-2"),
            ]
        )
    twice = uuid.uuid4()
    with pytest.raises(InvalidInput, match=f"trackingId {twice} is given to two messages"):
        queue.enqueue_many([NewMessage(message={}, tracking_id=twice)] * 2)
    assert _count(database) == 1


def test_the_tracking_id_of_a_finished_message_stays_taken(
    make_queue: MakeQueue, database: Database
) -> None:
    queue = make_queue()  # finished rows are deleted, their outcome kept a day
    done = uuid.uuid4()
    queue.enqueue({"n": 1}, tracking_id=done)
    [leased] = queue.lease("w1", 1).messages
    queue.complete("w1", [Completion(leased, result={"ok": True})])
    assert _count(database) == 0
    with pytest.raises(TrackingIdTaken, match=f"trackingId {done} is taken: a finished message"):
        queue.enqueue({"n": 2}, tracking_id=done)
    assert _count(database) == 0
    assert database.find_job(str(done)).result == {"ok": True}
    assert lease_all(queue) == []


def test_publish_refuses_a_tracking_id(make_queue: MakeQueue, database: Database) -> None:
    make_queue("mail", subscriptions=[{"topic": "order-placed"}])
    with pytest.raises(InvalidInput, match="trackingId names one message"):
        database.publish("order-placed", {"n": 1}, tracking_id=uuid.uuid4())
    assert _count(database, "mail") == 0
