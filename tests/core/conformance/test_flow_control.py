"""Pausing a queue and limiting its lease rate, in the core (every engine).

Part of the conformance suite: every test runs on every engine (`db_url`). Real worker processes
against a paused or rate-limited queue are in tests/worker/test_flow_control.py.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tablequeue import Completion, Database, NewMessage, Queue
from tablequeue.errors import QueueNotFound, SpecError
from tablequeue.spec import QueueResource, validate_queue
from tests.support.waiting import wait_until

from .helpers import MakeQueue, lease_all


def enqueue(queue: Queue, count: int) -> None:
    queue.enqueue_many([NewMessage(message={"n": n}) for n in range(count)])


def test_a_paused_queue_leases_nothing_and_still_takes_messages(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue(keep_processed_for="forever")
    enqueue(queue, 5)
    held = queue.lease("w1", 2).messages
    state = database.pause("orders")
    assert state.paused and state.paused_at is not None
    assert database.pause("orders").paused_at == state.paused_at  # a second pause keeps the time
    batch = queue.lease("w1", 10)
    assert (batch.messages, batch.paused) == ([], True)
    assert database.queue("orders").lease("w2", 10).messages == []  # any handle, any worker
    assert queue.enqueue({"late": True}).status == "Pending"
    # Messages leased before the pause finish as usual.
    assert queue.complete("w1", [Completion(m) for m in held]).processed == 2
    assert database.flow_state("orders").paused
    assert not database.resume("orders").paused
    assert len(lease_all(queue)) == 4
    assert queue.lease("w1", 10).paused is False


def test_pause_and_resume_of_a_queue_that_does_not_exist(database: Database) -> None:
    with pytest.raises(QueueNotFound):
        database.pause("nope")
    with pytest.raises(QueueNotFound):
        database.resume("nope")


def test_the_declared_pause_wins_only_when_the_declaration_changes(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue(paused=True)
    enqueue(queue, 3)
    assert database.flow_state("orders").paused and queue.lease("w1", 10).messages == []
    database.resume("orders")  # at runtime
    assert database.apply(QueueResource.from_name("orders", paused=True)) == "unchanged"
    assert not database.flow_state("orders").paused  # re-applying the same spec keeps it
    assert database.apply(QueueResource.from_name("orders", paused=False)) == "updated"
    assert not database.flow_state("orders").paused
    database.pause("orders")
    database.apply(QueueResource.from_name("orders", paused=False, max_attempts=2))
    assert database.flow_state("orders").paused  # spec.paused did not change
    database.apply(QueueResource.from_name("orders", paused=True))
    assert database.flow_state("orders").paused
    database.apply(QueueResource.from_name("orders"))  # paused: false by default again
    assert not database.flow_state("orders").paused
    assert len(lease_all(queue)) == 3


def test_a_rate_limit_bounds_each_batch_by_the_tokens_in_the_bucket(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue(rate_limit={"messagesPerSecond": 2, "burst": 3})
    enqueue(queue, 10)
    first = queue.lease("w1", 10)
    assert len(first.messages) == 3  # a full bucket: the burst
    assert first.throttled_for is not None and 0 < first.throttled_for <= 0.5 + 0.01
    empty = queue.lease("w2", 10)
    if not empty.messages:  # unless half a second passed meanwhile
        assert empty.throttled_for is not None and 0 < empty.throttled_for <= 0.5 + 0.01
    # The bucket refills with the database clock, for every handle alike.
    other = database.queue("orders")
    leased = len(first.messages) + len(empty.messages)
    while leased < 10:
        batch = wait_until(lambda: other.lease("w3", 10).messages, timeout=30)
        assert len(batch) <= 3
        leased += len(batch)
    assert queue.count(status="Pending") == 0
    state = database.flow_state("orders")
    assert (state.messages_per_second, state.burst) == (2.0, 3)


def test_the_default_burst_is_one_second_worth(database: Database, make_queue: MakeQueue) -> None:
    make_queue(rate_limit={"messagesPerSecond": 2.5})
    assert database.flow_state("orders").burst == 3
    make_queue("slow", rate_limit={"messagesPerSecond": 0.1})
    assert database.flow_state("slow").burst == 1


def test_a_handle_follows_a_limit_added_and_lifted_while_it_leases(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    enqueue(queue, 10)
    assert len(queue.lease("w1", 2).messages) == 2  # no limit yet
    database.apply(
        QueueResource.from_name("orders", rate_limit={"messagesPerSecond": 0.01, "burst": 2})
    )
    # This handle last saw no limit: the lease statement itself refuses, then it reads the limit.
    assert len(queue.lease("w1", 10).messages) == 2
    assert queue.lease("w1", 10).messages == []
    database.apply(QueueResource.from_name("orders"))  # lifted
    assert not database.flow_state("orders").rate_limited
    assert len(lease_all(queue)) == 6


def test_changing_the_rate_keeps_the_bucket_and_deleting_the_queue_drops_it(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue(rate_limit={"messagesPerSecond": 0.01, "burst": 2})
    enqueue(queue, 5)
    assert len(lease_all(queue)) == 2
    database.apply(
        QueueResource.from_name("orders", rate_limit={"messagesPerSecond": 0.02, "burst": 2})
    )
    assert database.flow_state("orders").messages_per_second == 0.02
    assert lease_all(queue) == []  # emptied by the leases above, not refilled by the change
    database.delete_queue("orders", drop_table=True)
    with database.transaction() as connection:
        rows = connection.execute(sa.select(database.rate_limits)).all()
    assert rows == []


def test_a_paused_rate_limited_queue_leases_nothing_and_keeps_its_tokens(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue(rate_limit={"messagesPerSecond": 0.01, "burst": 3})
    enqueue(queue, 5)
    database.pause("orders")
    batch = queue.lease("w1", 10)
    assert (batch.messages, batch.paused) == ([], True)
    database.resume("orders")
    assert len(lease_all(queue)) == 3


@pytest.mark.parametrize(
    ("limit", "problem"),
    [
        ({"messagesPerSecond": 0}, "greater than 0"),
        ({"messagesPerSecond": 5, "burst": 0}, "greater than or equal to 1"),
        ({"burst": 5}, "messagesPerSecond"),
        ({"messagesPerSecond": "fast"}, "messagesPerSecond"),
        ({"messagesPerSecond": 1, "perMinute": 5}, "unknown field"),
    ],
)
def test_a_bad_rate_limit_is_refused_with_its_field(limit: object, problem: str) -> None:
    with pytest.raises(SpecError, match=r"spec\.rateLimit") as refused:
        validate_queue({"metadata": {"name": "orders"}, "spec": {"rateLimit": limit}}, "queue")
    assert problem in str(refused.value)


def test_an_older_registry_is_migrated_for_pauses_and_rate_limits(
    database: Database, make_queue: MakeQueue
) -> None:
    make_queue()
    with database.transaction() as connection:  # the registry as the previous release made it
        quote = connection.dialect.identifier_preparer.quote
        connection.exec_driver_sql(
            f"ALTER TABLE tablequeue_queues DROP COLUMN {quote('paused_at')}"
        )
        connection.exec_driver_sql("DROP TABLE tablequeue_rate_limits")
    assert database.queue("orders").count() == 0  # readers before the migration
    database.apply(QueueResource.from_name("orders", rate_limit={"messagesPerSecond": 1}))
    assert database.flow_state("orders").rate_limited
    assert database.pause("orders").paused
