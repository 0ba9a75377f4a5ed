"""Dedupe modes at enqueue (`spec.dedupe`, a call's `dedupe=`): replace, keep, window; each
outcome reported with the row; concurrent keeps end with one row; the caller's transaction.

Part of the conformance suite: every test runs on every engine (`db_url`). A window is moved
into the past with a plain UPDATE of `created_at`, never by sleeping.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from tablequeue import Completion, Database, Enqueued, NewMessage, Queue
from tablequeue.errors import InvalidInput, SpecError
from tablequeue.spec import QueueResource
from tests.support.application import application_engine

from .helpers import MakeQueue

KEEP = {"mode": "keep"}
HOUR = {"mode": "window", "window": "1h"}


def _age(queue: Queue, message_id: str, **columns: timedelta) -> None:
    """Move the row's times back by the given amounts (created_at=..., processed_at=...)."""
    t = queue.table
    with queue.storage.transaction() as connection:
        current = connection.execute(
            sa.select(*(t.c[name] for name in columns)).where(t.c.message_id == message_id)
        ).one()
        moved = {name: value - columns[name] for name, value in zip(columns, current, strict=True)}
        connection.execute(sa.update(t).where(t.c.message_id == message_id).values(**moved))


def _process(queue: Queue) -> None:
    [leased] = queue.lease("w1", 10).messages
    queue.complete("w1", [Completion(leased)])


def test_replace_is_the_default_and_reports_updated(make_queue: MakeQueue) -> None:
    queue = make_queue()
    first = queue.enqueue({"v": 1}, message_id="a")
    second = queue.enqueue({"v": 2}, message_id="a")
    assert (first.outcome, second.outcome) == ("inserted", "updated")
    assert second.version == 2 and queue.get(first.id or 0).message == {"v": 2}


def test_keep_leaves_a_scheduled_message_exactly_as_it_is(make_queue: MakeQueue) -> None:
    queue = make_queue(dedupe=KEEP)
    at = datetime.now(UTC) + timedelta(hours=1)
    first = queue.enqueue({"v": 1}, message_id="a", at=at, priority=3, label="first")
    before = queue.get(first.id or 0)
    again = queue.enqueue({"v": 2}, message_id="a", priority=9, label="second")
    assert again == Enqueued(first.id, first.tracking_id, "a", "kept", "Sleeping", 1)
    after = queue.get(first.id or 0)
    assert after == before  # body, schedule, priority, label, version, times: all as they were
    assert queue.lease("w1", 10).messages == []  # still not due


def test_keep_leaves_a_processed_row_processed(make_queue: MakeQueue) -> None:
    queue = make_queue(dedupe=KEEP, keep_processed_for="forever")
    first = queue.enqueue({"v": 1}, message_id="a")
    _process(queue)
    again = queue.enqueue({"v": 2}, message_id="a")
    assert (again.outcome, again.id, again.status, again.version) == (
        "kept",
        first.id,
        "Processed",
        1,
    )
    assert queue.get(first.id or 0).message == {"v": 1}


def test_a_calls_mode_wins_over_the_queues(make_queue: MakeQueue) -> None:
    replacing = make_queue("replacing")
    first = replacing.enqueue({"v": 1}, message_id="a")
    kept = replacing.enqueue({"v": 2}, message_id="a", dedupe="keep")
    replaced = replacing.enqueue({"v": 3}, message_id="a")
    assert (kept.outcome, kept.id, kept.version) == ("kept", first.id, 1)
    assert (replaced.outcome, replaced.version) == ("updated", 2)
    keeping = make_queue("keeping", dedupe=KEEP)
    keeping.enqueue({"v": 1}, message_id="a")
    forced = keeping.enqueue({"v": 2}, message_id="a", dedupe="replace")
    assert (forced.outcome, forced.version) == ("updated", 2)
    assert keeping.enqueue({"v": 3}, message_id="a").outcome == "kept"


def test_keep_in_a_batch_reports_each_message(make_queue: MakeQueue) -> None:
    queue = make_queue()
    old = queue.enqueue({"v": 0}, message_id="old")
    results = queue.enqueue_many(
        [
            NewMessage(message={"v": 1}, message_id="old"),
            NewMessage(message={"v": 2}, message_id="new"),
            NewMessage(message={"v": 3}, message_id="new"),
            NewMessage(message={"v": 4}),
        ],
        dedupe="keep",
    )
    assert [r.outcome for r in results] == ["kept", "inserted", "kept", "inserted"]
    assert results[0].id == old.id and results[2].id == results[1].id
    assert results[2].tracking_id == results[1].tracking_id
    assert queue.count() == 3
    assert sorted(m.message["v"] for m in queue.messages(limit=10)) == [0, 2, 4]


def test_window_keeps_inside_and_replaces_after_starting_again(make_queue: MakeQueue) -> None:
    queue = make_queue(dedupe=HOUR)
    first = queue.enqueue({"v": 1}, message_id="a")
    inside = queue.enqueue({"v": 2}, message_id="a")
    assert (inside.outcome, inside.id, inside.version) == ("kept", first.id, 1)
    _age(queue, "a", created_at=timedelta(minutes=61))
    after = queue.enqueue({"v": 3}, message_id="a")
    assert (after.outcome, after.id, after.version, after.status) == (
        "updated",
        first.id,
        2,
        "Pending",
    )
    assert queue.get(first.id or 0).message == {"v": 3}
    # The replacement starts the window again.
    assert queue.enqueue({"v": 4}, message_id="a").outcome == "kept"


def test_window_keeps_the_processed_row_and_retention_honours_it(make_queue: MakeQueue) -> None:
    queue = make_queue(dedupe=HOUR)  # keepProcessedFor defaults to 0s: deleted at once
    assert queue.spec.keep_processed == timedelta(hours=1)
    first = queue.enqueue({"v": 1}, message_id="a")
    _process(queue)
    again = queue.enqueue({"v": 2}, message_id="a")
    assert (again.outcome, again.id, again.status) == ("kept", first.id, "Processed")
    _age(queue, "a", processed_at=timedelta(minutes=59), updated_at=timedelta(minutes=59))
    assert queue.purge() == 0
    _age(queue, "a", processed_at=timedelta(minutes=2), updated_at=timedelta(minutes=2))
    assert queue.purge() == 1 and queue.count() == 0


def test_a_calls_window_on_a_replace_queue(make_queue: MakeQueue) -> None:
    queue = make_queue()
    first = queue.enqueue({"v": 1}, message_id="a")
    inside = queue.enqueue({"v": 2}, message_id="a", dedupe="window", dedupe_window="10m")
    assert (inside.outcome, inside.id) == ("kept", first.id)
    _age(queue, "a", created_at=timedelta(minutes=11))
    after = queue.enqueue({"v": 3}, message_id="a", dedupe="window", dedupe_window="10m")
    assert (after.outcome, after.version) == ("updated", 2)
    with pytest.raises(InvalidInput, match="window needs a window"):
        queue.enqueue({"v": 4}, message_id="a", dedupe="window")
    with pytest.raises(InvalidInput, match="only with dedupe mode window"):
        queue.enqueue({"v": 4}, message_id="a", dedupe="keep", dedupe_window="1h")
    with pytest.raises(InvalidInput, match="'sometimes' is not a mode"):
        queue.enqueue({"v": 4}, message_id="a", dedupe="sometimes")
    with pytest.raises(InvalidInput, match="invalid duration"):
        queue.enqueue({"v": 4}, message_id="a", dedupe="window", dedupe_window="soon")
    assert queue.get(first.id or 0).message == {"v": 3}


def test_window_on_an_idempotent_queue_discards_an_equal_body_after_it(
    make_queue: MakeQueue,
) -> None:
    queue = make_queue(dedupe=HOUR, idempotent=True)
    queue.enqueue({"v": 1}, message_id="a")
    assert queue.enqueue({"v": 1}, message_id="a").outcome == "kept"
    _age(queue, "a", created_at=timedelta(hours=2))
    same = queue.enqueue({"v": 1}, message_id="a")
    assert (same.outcome, same.id) == ("discarded", None)
    assert queue.enqueue({"v": 2}, message_id="a").outcome == "updated"


def test_a_window_mode_without_a_window_is_refused_naming_the_field() -> None:
    with pytest.raises(SpecError, match=r"dedupe\.mode window needs dedupe\.window"):
        QueueResource.from_name("orders", dedupe={"mode": "window"})
    with pytest.raises(SpecError, match=r"dedupe\.window must be longer than 0s"):
        QueueResource.from_name("orders", dedupe={"mode": "window", "window": "0s"})
    with pytest.raises(SpecError, match=r"dedupe\.window is read only with dedupe\.mode window"):
        QueueResource.from_name("orders", dedupe={"mode": "keep", "window": "1h"})


def test_publish_follows_each_subscribers_own_mode(
    database: Database, make_queue: MakeQueue
) -> None:
    keeping = make_queue("keeping", dedupe=KEEP, subscriptions=[{"topic": "t"}])
    make_queue("replacing", subscriptions=[{"topic": "t"}])
    database.publish("t", {"v": 1}, message_id="a")
    deliveries = database.publish("t", {"v": 2}, message_id="a")
    assert {d.queue: d.outcome for d in deliveries} == {"keeping": "kept", "replacing": "updated"}
    [kept] = keeping.messages()
    assert kept.message == {"v": 1}


@pytest.fixture
def app(database: Database) -> Iterator[sa.Engine]:
    engine = application_engine(database.url)
    yield engine
    engine.dispose()


def test_keep_in_the_callers_transaction(app: sa.Engine, make_queue: MakeQueue) -> None:
    queue = make_queue(dedupe=KEEP)
    with app.connect() as connection:
        with connection.begin():
            first = queue.enqueue({"v": 1}, connection=connection, message_id="a")
            again = queue.enqueue({"v": 2}, connection=connection, message_id="a")
            assert (first.outcome, again.outcome, again.id) == ("inserted", "kept", first.id)
            connection.rollback()
        assert queue.count() == 0
        with connection.begin():
            queue.enqueue({"v": 3}, connection=connection, message_id="a")
    [message] = queue.messages()
    assert message.message == {"v": 3}


def test_concurrent_keeps_of_one_message_id_leave_one_row(
    make_queue: MakeQueue, database: Database
) -> None:
    queue = make_queue(dedupe=KEEP)
    threads, rounds = 4, 5
    barrier = threading.Barrier(threads)
    results: list[list[Enqueued]] = [[] for _ in range(threads)]
    failures: list[BaseException] = []

    def enqueue(me: int) -> None:
        try:
            for round_number in range(rounds):
                barrier.wait(timeout=60)
                body = {"thread": me, "round": round_number}
                results[me].append(queue.enqueue(body, message_id=f"id-{round_number}"))
        except BaseException as error:  # reported by the test's thread
            failures.append(error)
            barrier.abort()

    running = [threading.Thread(target=enqueue, args=(me,)) for me in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join(timeout=120)
    assert not failures and all(len(mine) == rounds for mine in results)
    assert queue.count() == rounds
    for round_number in range(rounds):
        told = [mine[round_number] for mine in results]
        [stored] = queue.messages(message_id=f"id-{round_number}")
        assert sorted(r.outcome for r in told) == ["inserted"] + ["kept"] * (threads - 1)
        assert {(r.id, r.tracking_id) for r in told} == {(stored.id, stored.tracking_id)}
        [winner] = [
            me for me, mine in enumerate(results) if mine[round_number].outcome == "inserted"
        ]
        assert stored.message == {"thread": winner, "round": round_number}
