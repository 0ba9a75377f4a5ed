"""People, tools and housekeeping: set status, edit, cancel, sweep, purge, vacuum.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from tablequeue import Completion, Database, Failure, NewMessage
from tablequeue.dialects import Capabilities
from tablequeue.errors import Conflict, InvalidInput, MessageNotFound
from tests.support.waiting import wait_until

from .helpers import MakeQueue, lease_all, statuses


def test_cancel_by_tracking_id(make_queue: MakeQueue) -> None:
    queue = make_queue(keep_processed_for="forever")
    waiting = queue.enqueue({"n": 1})
    running = queue.enqueue({"n": 2})
    assert queue.cancel(str(waiting.tracking_id)).status == "Cancelled"
    [m] = queue.lease("w1", 5).messages
    assert m.id == running.id
    queue.cancel(running.tracking_id)  # type: ignore[arg-type]
    assert queue.extend("w1", [m.id]) == set()  # the running handler learns it is cancelled
    assert queue.complete("w1", [Completion(m)]).lease_lost == 1
    with pytest.raises(Conflict, match="already Cancelled"):
        queue.cancel(running.tracking_id)  # type: ignore[arg-type]
    with pytest.raises(MessageNotFound):
        queue.cancel("00000000-0000-0000-0000-000000000000")
    with pytest.raises(InvalidInput, match="invalid tracking id"):
        queue.cancel("'; DROP TABLE orders; --")


def test_set_status_by_ids_status_and_predicate(make_queue: MakeQueue) -> None:
    queue = make_queue()
    a = queue.enqueue({"Product": {"Sku": "123"}}, status="OnHold")
    b = queue.enqueue({"Product": {"Sku": "456"}}, status="OnHold")
    c = queue.enqueue({"Product": {"Sku": "123"}})
    [leased] = queue.lease("w1", 1).messages
    assert leased.id == c.id
    where = 'Product.Sku == "123"'
    assert queue.set_status("Paused", where=where, dry_run=True) == 1  # Leased row untouched
    assert queue.set_status("Paused", where=where) == 1
    assert statuses(queue) == {a.id: "Paused", b.id: "OnHold", c.id: "Leased"}
    assert queue.set_status("Pending", from_status="OnHold") == 1
    assert queue.set_status("Error", ids=[c.id or 0]) == 0
    assert queue.set_status("Error", ids=[c.id or 0], force=True) == 1
    assert statuses(queue) == {a.id: "Paused", b.id: "Pending", c.id: "Error"}
    with pytest.raises(InvalidInput, match="choose messages"):
        queue.set_status("Pending")
    with pytest.raises(InvalidInput, match="set only by leasing"):
        queue.set_status("Leased", ids=[a.id or 0])


def test_set_pending_gives_a_fresh_start(make_queue: MakeQueue) -> None:
    queue = make_queue()
    queue.enqueue({"n": 1})
    [m] = queue.lease("w1", 1).messages
    queue.fail("w1", [Failure(m, "boom")])
    assert queue.get(m.id).status == "Error"
    queue.set_status("Pending", ids=[m.id])
    stored = queue.get(m.id)
    assert stored.attempts == 0 and stored.status == "Pending"
    assert lease_all(queue) == [m.id]


def test_editing_the_body_of_a_leased_message_is_a_new_version(make_queue: MakeQueue) -> None:
    queue = make_queue()
    queue.enqueue({"v": 1})
    [old] = queue.lease("w1", 1).messages
    assert queue.edit(old.id, body={"v": "fixed"}, force=True).version == 2
    assert queue.complete("w1", [Completion(old)]).requeued_newer_version == 1
    assert queue.get(old.id).message == {"v": "fixed"}
    assert lease_all(queue, "w2") == [old.id]


def test_retrying_an_expired_message_by_hand_clears_its_past_expiry(make_queue: MakeQueue) -> None:
    queue = make_queue()
    doomed = queue.enqueue({"n": 1}, expires_after=0.2)
    wait_until(lambda: queue.sweep().expired == 1, timeout=10)
    assert queue.set_status("Pending", ids=[doomed.id or 0]) == 1
    assert queue.get(doomed.id or 0).expires_at is None
    assert lease_all(queue) == [doomed.id]


@pytest.mark.parametrize("policy", ["Abandon", "Retry"])
def test_expired_leases_follow_the_policy(make_queue: MakeQueue, policy: str) -> None:
    queue = make_queue(on_lease_expired=policy, max_attempts=2)
    queue.enqueue({"n": 1})
    [m] = queue.lease("w1", 5, lease_seconds=0.2, correlation_id="c-1").messages
    swept = wait_until(
        lambda: s if (s := queue.sweep()).abandoned + s.retried else None, timeout=10
    )
    stored = queue.get(m.id)
    assert stored.last_error and "held by w1" in stored.last_error and "c-1" in stored.last_error
    if policy == "Abandon":
        assert swept.abandoned == 1 and stored.status == "Abandoned"
        assert lease_all(queue) == []
        return
    assert swept.retried == 1 and stored.status == "Pending"
    [m] = queue.lease("w2", 5, lease_seconds=0.2).messages
    assert m.attempts == 2
    wait_until(lambda: queue.sweep().errored == 1, timeout=10)
    assert queue.get(m.id).status == "Error"


@pytest.mark.parametrize("policy", ["Abandon", "Retry"])
def test_a_new_version_survives_the_crash_of_the_worker_holding_the_old(
    make_queue: MakeQueue, policy: str
) -> None:
    queue = make_queue(on_lease_expired=policy)
    queue.enqueue({"v": 1}, message_id="doc")
    [old] = queue.lease("w1", 1, lease_seconds=0.2).messages
    queue.enqueue({"v": 2}, message_id="doc")
    wait_until(lambda: queue.sweep().retried == 1, timeout=10)  # w1 died: its lease lapsed
    stored = queue.get(old.id)
    assert (stored.status, stored.message, stored.attempts) == ("Pending", {"v": 2}, 0)
    [new] = queue.lease("w2", 1).messages
    assert new.message == {"v": 2}


def test_purge_by_retention_and_by_status(make_queue: MakeQueue) -> None:
    queue = make_queue(keep_processed_for="forever", max_attempts=1)
    queue.enqueue_many([NewMessage(message={"n": n}) for n in range(6)])
    leased = queue.lease("w1", 6).messages
    queue.complete("w1", [Completion(m) for m in leased[:4]])
    queue.fail("w1", [Failure(m, "x") for m in leased[4:]])
    assert queue.purge() == 0  # kept forever
    assert queue.purge(statuses=["Processed"], older_than=timedelta(hours=1)) == 0
    assert queue.purge(statuses=["Processed"], older_than=timedelta(0)) == 4
    assert queue.purge(statuses=["Error"]) == 2
    assert queue.count() == 0
    with pytest.raises(InvalidInput, match="leased messages cannot be purged"):
        queue.purge(statuses=["Leased"])


def test_vacuum_reclaims_finished_messages_where_the_engine_vacuums(
    make_queue: MakeQueue, capabilities: Capabilities
) -> None:
    queue = make_queue()
    assert queue.vacuum() is False  # nothing dead yet
    queue.enqueue_many([NewMessage(message={"n": n}) for n in range(12_000)])
    while batch := queue.lease("w1", 1000).messages:
        queue.complete("w1", [Completion(m) for m in batch])
    if not capabilities.vacuums:
        assert queue.vacuum() is False  # the engine reuses free pages by itself
        return
    # The statistics of dead rows reach pg_stat_user_tables shortly after the commits.
    wait_until(queue.vacuum, timeout=30)
    with queue.storage.transaction() as connection:
        dead = connection.execute(
            sa.text("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'orders'")
        ).scalar_one()
    assert dead < 10_000


def test_a_status_nobody_knows_is_refused_until_a_message_holds_it(
    make_queue: MakeQueue, database: Database
) -> None:
    """The guard every status write asks first (CLI, API, pipeline): built-in statuses and the
    queue's default pass; an unknown one is refused with the closest known status and the
    caller's way to override; once a message holds it, it is known."""
    queue = make_queue()
    database.set_default_status(queue.name, "OnHold")
    queue.refuse_unknown_statuses(["Pending", "Error", "OnHold", None])
    with pytest.raises(InvalidInput) as refused:
        queue.refuse_unknown_statuses(["Pending", "Erorr"], override="--new-status")
    assert str(refused.value) == (
        f"status 'Erorr' is not a known status and no message of queue {queue.name!r} has it; "
        "did you mean 'Error'? known: Abandoned, Cancelled, Error, Expired, OnHold, Pending, "
        "Processed, Sleeping (--new-status sets it anyway)"
    )
    with pytest.raises(InvalidInput, match=r"'Zzz' is not a known status .*; known: Aband"):
        queue.refuse_unknown_statuses(["Zzz"])
    with pytest.raises(InvalidInput, match="'Leased' is set only by leasing"):
        queue.refuse_unknown_statuses(["Leased"])
    queue.enqueue({"n": 1}, status="Parked")
    queue.refuse_unknown_statuses(["Parked"])
    with pytest.raises(InvalidInput, match="did you mean 'Parked'"):
        queue.refuse_unknown_statuses(["Parkd"])
