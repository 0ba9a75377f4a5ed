"""Worker heartbeats in `tablequeue_workers`: the upsert, the listing with live and stale
states by the database clock, forgetting, pruning, and the health rule on workers.

Part of the conformance suite: every test runs on every engine (`db_url`). Rows are aged by
moving `last_seen` back on the database's own clock, so nothing here waits for a timer.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tablequeue import Database
from tablequeue.errors import InvalidInput
from tablequeue.models import Heartbeat, stale_after
from tablequeue.spec import QueueResource
from tablequeue.storage.workers import FORGET_AFTER_SECONDS
from tests.support.waiting import wait_until

from .helpers import MakeQueue


def beat(database: Database, worker_id: str, queue: str = "orders", **counts: int) -> None:
    database.heartbeat(
        Heartbeat(worker_id, queue, f"pod-{worker_id}", 4242, "0.1.0", 5.0, **counts)
    )


def age(database: Database, worker_id: str, seconds: float) -> None:
    """Move a worker's last heartbeat `seconds` into the past (database clock)."""
    table = database.workers_table
    earlier = database.dialect.seconds_from_now(sa.literal(-seconds))
    with database.transaction() as connection:
        connection.execute(
            sa.update(table).where(table.c.worker_id == worker_id).values(last_seen=earlier)
        )


def test_a_heartbeat_inserts_then_updates_one_row(
    database: Database, make_queue: MakeQueue
) -> None:
    make_queue("orders")
    beat(database, "w1", in_flight=1, processed=2, failed=3)
    [first] = database.workers()
    assert (first.worker_id, first.queue, first.host, first.pid, first.version) == (
        "w1",
        "orders",
        "pod-w1",
        4242,
        "0.1.0",
    )
    assert (first.in_flight, first.processed, first.failed) == (1, 2, 3)
    assert first.state == "live" and first.seconds_since_seen < stale_after(5.0)
    assert first.started_at <= first.last_seen
    wait_until(lambda: database.workers()[0].seconds_since_seen > 0.01)  # the clock moved
    beat(database, "w1", in_flight=0, processed=10, failed=4)
    [second] = database.workers()
    assert (second.in_flight, second.processed, second.failed) == (0, 10, 4)
    assert second.started_at == first.started_at  # set by the first beat only
    assert second.last_seen > first.last_seen


def test_workers_are_listed_per_queue_with_their_state(
    database: Database, make_queue: MakeQueue
) -> None:
    make_queue("orders")
    make_queue("mail")
    for worker, queue in (("a", "orders"), ("b", "orders"), ("c", "mail")):
        beat(database, worker, queue)
    age(database, "b", stale_after(5.0) + 30)
    assert {w.worker_id for w in database.workers()} == {"a", "b", "c"}
    states = {w.worker_id: w.state for w in database.workers("orders")}
    assert states == {"a": "live", "b": "stale"}
    assert [w.worker_id for w in database.workers("mail")] == ["c"]
    assert database.workers("nobody") == []
    present = database.worker_presence("orders")
    assert present is not None and (present.live, present.stale) == (1, 1)
    assert [w.to_json()["state"] for w in database.workers("orders")] == ["live", "stale"]


def test_a_clean_stop_forgets_and_old_rows_age_out(
    database: Database, make_queue: MakeQueue
) -> None:
    make_queue("orders")
    for worker in ("stopped", "dead", "long-dead"):
        beat(database, worker)
    assert database.forget_worker("stopped") is True
    assert database.forget_worker("stopped") is False
    age(database, "dead", 600)
    age(database, "long-dead", FORGET_AFTER_SECONDS + 60)
    # Past the horizon a row is never shown, even before a worker deletes it.
    assert [w.worker_id for w in database.workers()] == ["dead"]
    assert database.prune_workers() == 1
    assert database.prune_workers(older_than=300) == 1  # "dead" too, with a shorter horizon
    with database.transaction() as connection:
        left = connection.execute(sa.select(sa.func.count()).select_from(database.workers_table))
        assert left.scalar_one() == 0


def test_bad_heartbeats_and_limits_are_refused(database: Database, make_queue: MakeQueue) -> None:
    make_queue("orders")
    with pytest.raises(InvalidInput, match="worker id"):
        beat(database, "x" * 201)
    with pytest.raises(InvalidInput, match="queue name"):
        beat(database, "w", queue="Not A Queue")
    with pytest.raises(InvalidInput, match="limit"):
        database.workers(limit=0)


def test_no_table_yet_lists_no_workers(database: Database, make_queue: MakeQueue) -> None:
    make_queue("orders")
    with database.transaction() as connection:
        database.workers_table.drop(connection)
    assert database.workers() == []
    assert database.worker_presence("orders") is not None  # an empty table reads as none
    make_queue("orders", category="Again")  # apply makes it again
    beat(database, "w1")
    assert [w.worker_id for w in database.workers("orders")] == ["w1"]


def test_health_wants_a_live_worker_only_while_due_messages_wait(database: Database) -> None:
    rules = {"no_workers_after_seconds": 1}
    database.apply(QueueResource.from_name("orders", health=rules, workers={"batch_size": 5}))
    database.apply(QueueResource.from_name("plain", health=rules))
    orders, plain = database.queue("orders"), database.queue("plain")
    assert orders.stats().health == "Healthy"  # nothing due: no worker needed (scaled to zero)
    orders.enqueue({"n": 1})
    plain.enqueue({"n": 1})
    unhealthy = wait_until(lambda: (s := orders.stats()).health == "Unhealthy" and s, timeout=30)
    assert unhealthy.health_reasons[0].startswith("no live worker heartbeats; oldest due")
    # A queue that declares no workers and never had one: consumed by other code, no rule.
    assert plain.stats().health == "Healthy"
    beat(database, "w1")
    assert orders.stats().health == "Healthy"
    age(database, "w1", 600)
    stale = orders.stats()
    assert stale.health == "Unhealthy"
    assert stale.health_reasons[0].startswith("no live worker heartbeats (1 stale)")
    # A worker that once heartbeat for a queue makes the queue expect one, once its message has
    # waited past the rule (enqueued after orders', it may not have yet on a loaded machine).
    beat(database, "w2", queue="plain")
    age(database, "w2", 600)
    wait_until(lambda: plain.stats().oldest_pending_seconds > 1, timeout=30)
    expecting = plain.stats()
    assert expecting.health == "Unhealthy", (expecting, database.workers("plain"))
