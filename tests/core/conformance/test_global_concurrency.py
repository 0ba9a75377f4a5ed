"""A queue's global concurrency: at most N messages Leased at once, all handles together.

Part of the conformance suite: every test runs on every engine (`db_url`). Real worker processes
against a limited queue are in tests/worker/test_global_concurrency.py.
"""

from __future__ import annotations

import pytest

from tablequeue import Completion, Database, Failure, NewMessage, Queue
from tablequeue.errors import SpecError
from tablequeue.spec import QueueResource, validate_queue
from tests.support.statements import StatementsRun
from tests.support.waiting import wait_until

from .helpers import MakeQueue, lease_at_once_behind_the_registry_row, statuses


def enqueue(queue: Queue, count: int) -> None:
    queue.enqueue_many([NewMessage(message={"n": n}) for n in range(count)])


def leased_count(queue: Queue) -> int:
    return sum(status == "Leased" for status in statuses(queue).values())


def test_a_lease_takes_at_most_what_the_limit_leaves_and_settling_frees_slots(
    make_queue: MakeQueue,
) -> None:
    queue = make_queue(global_concurrency=3, max_attempts=5)
    enqueue(queue, 10)
    first = queue.lease("w1", 10)
    assert len(first.messages) == 3 and not first.at_concurrency_limit
    full = queue.lease("w2", 10)
    assert (full.messages, full.at_concurrency_limit) == ([], True)
    done, failed, given_back = first.messages
    queue.complete("w1", [Completion(done)])
    assert leased_count(queue) == 2
    assert len(queue.lease("w2", 10).messages) == 1  # the completion freed one
    assert queue.lease("w2", 10).at_concurrency_limit
    queue.fail("w1", [Failure(failed, "boom")])  # retried later: no longer Leased
    assert len(queue.lease("w2", 10).messages) == 1
    assert queue.release("w1", [given_back.id or 0]) == 1
    assert len(queue.lease("w3", 10).messages) == 1
    assert leased_count(queue) == 3


def test_connections_leasing_at_once_never_exceed_the_limit(
    database: Database, db_url: str, make_queue: MakeQueue
) -> None:
    make_queue(global_concurrency=5)
    enqueue(database.queue("orders"), 40)
    taken = lease_at_once_behind_the_registry_row(database, db_url, "orders")
    assert len(taken) == len(set(taken)) == 5
    assert leased_count(database.queue("orders")) == 5


def test_a_lapsed_lease_counts_until_the_sweep_settles_it(make_queue: MakeQueue) -> None:
    queue = make_queue(global_concurrency=2, on_lease_expired="Retry", max_attempts=3)
    enqueue(queue, 5)
    lapsing = queue.lease("w1", 10, lease_seconds=0.2).messages
    assert len(lapsing) == 2
    expires = max(m.lease_expires_at for m in lapsing if m.lease_expires_at is not None)
    wait_until(lambda: queue.clock() > expires)
    assert queue.lease("w2", 10).at_concurrency_limit  # lapsed, not yet swept: still Leased
    assert queue.sweep().retried == 2
    assert len(queue.lease("w2", 10).messages) == 2


def test_a_handle_follows_a_limit_added_and_lifted_while_it_leases(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    enqueue(queue, 10)
    assert len(queue.lease("w1", 2).messages) == 2  # no limit yet
    database.apply(QueueResource.from_name("orders", global_concurrency=3))
    assert database.flow_state("orders").max_leased == 3
    # This handle last saw no limit: the lease statement itself refuses, then it reads the limit.
    assert len(queue.lease("w1", 10).messages) == 1
    assert queue.lease("w1", 10).at_concurrency_limit
    database.apply(QueueResource.from_name("orders"))  # lifted
    assert not database.flow_state("orders").concurrency_limited
    assert len(queue.lease("w1", 10).messages) == 7


def test_a_rate_limited_handle_follows_a_global_concurrency_added_while_it_leases(
    database: Database, make_queue: MakeQueue
) -> None:
    rate = {"messagesPerSecond": 1000, "burst": 1000}
    queue = make_queue(rate_limit=rate)
    enqueue(queue, 10)
    assert len(queue.lease("w1", 1).messages) == 1  # the handle leases in the bucket's turn
    database.apply(QueueResource.from_name("orders", rate_limit=rate, global_concurrency=3))
    # A stale belief costs an empty lease, never a lease too many.
    leased = [len(queue.lease("w1", 10).messages) for _ in range(3)]
    assert leased == [0, 2, 0] and queue.lease("w1", 10).at_concurrency_limit
    assert leased_count(queue) == 3


def test_a_paused_limited_queue_leases_nothing(database: Database, make_queue: MakeQueue) -> None:
    queue = make_queue(global_concurrency=3, rate_limit={"messagesPerSecond": 0.01, "burst": 2})
    enqueue(queue, 5)
    database.pause("orders")
    batch = queue.lease("w1", 10)
    assert (batch.messages, batch.paused, batch.at_concurrency_limit) == ([], True, False)
    database.resume("orders")
    assert len(queue.lease("w1", 10).messages) == 2  # the tighter of the two limits: the burst


def test_an_unlimited_queue_pays_no_statement_for_the_limit(
    database: Database, make_queue: MakeQueue
) -> None:
    free, capped = make_queue("free"), make_queue("capped", global_concurrency=50)
    for queue in (free, capped):
        enqueue(queue, 5)
    capped.lease("w1", 1)  # the handle learns of its limit
    with StatementsRun(database) as unlimited:
        assert len(free.lease("w1", 2).messages) == 2
    with StatementsRun(database) as limited:
        assert len(capped.lease("w1", 2).messages) == 2
    assert not any("count(" in text for text in unlimited)
    assert len(limited) == len(unlimited) + 2  # the registry row locked, the Leased counted
    assert sum("count(" in text for text in limited) == 1


@pytest.mark.parametrize(
    ("limit", "problem"),
    [(0, "greater than or equal to 1"), ("five", "integer"), (2_000_000, "less than or equal")],
)
def test_a_bad_global_concurrency_is_refused_with_its_field(limit: object, problem: str) -> None:
    with pytest.raises(SpecError, match=r"spec\.globalConcurrency") as refused:
        validate_queue(
            {"metadata": {"name": "orders"}, "spec": {"globalConcurrency": limit}}, "queue"
        )
    assert problem in str(refused.value)


def test_an_older_registry_is_migrated_for_the_global_concurrency(
    database: Database, make_queue: MakeQueue
) -> None:
    make_queue()
    with database.transaction() as connection:  # the registry as the previous release made it
        quote = connection.dialect.identifier_preparer.quote
        connection.exec_driver_sql(
            f"ALTER TABLE tablequeue_queues DROP COLUMN {quote('max_leased')}"
        )
    assert database.queue("orders").count() == 0  # readers before the migration
    queue = make_queue(global_concurrency=2)
    enqueue(queue, 4)
    assert len(queue.lease("w1", 10).messages) == 2
    assert queue.lease("w1", 10).at_concurrency_limit
