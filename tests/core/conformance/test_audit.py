"""The audit trail: every change made while an actor is set (the API, the UI, the CLI) is
recorded in the change's transaction, with who, via what, what, the ids or predicate and how
many rows; nothing while none is set (a worker, a library caller); newest first, paged, kept
for a while.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tablequeue import Actor, Completion, Database, acting_as
from tablequeue.errors import Conflict, InvalidInput
from tablequeue.spec import QueueResource
from tablequeue.storage import audit
from tests.support.audit_entries import backdate

from .helpers import MakeQueue

ALICE = Actor("alice", "cli")
ADMIN = Actor("admin token", "api", "127.0.0.1")
HOSTILE = 'Sku == "\'; DROP TABLE orders; --"'


def test_changes_are_recorded_with_who_what_and_how_many(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue(
        "orders", schedules=[{"name": "nightly", "cron": "0 2 * * *", "message": {"n": 1}}]
    )
    ids = [queue.enqueue({"Sku": str(n)}).id or 0 for n in range(5)]
    tracking = queue.enqueue({"Sku": "t"}).tracking_id
    with acting_as(ALICE):
        assert queue.set_status("OnHold", where='Sku == "1"') == 1
        queue.edit(ids[0], body={"Sku": "0b"}, priority=3)
        queue.delete(ids[2])
        assert queue.delete_many([ids[3], 999_999]) == 1
        assert queue.cancel_many([ids[4]]) == 1
        queue.cancel(str(tracking))
        assert queue.purge(["Cancelled"], None) == 2
        database.pause("orders")
        database.resume("orders")
        database.set_default_status("orders", "Paused")
        queue.run_schedule("nightly")
    with acting_as(ADMIN):
        assert queue.set_status("Pending", ids=[ids[1]]) == 1
    entries = database.audit_entries()
    got = [(e.action, e.rows, e.target) for e in reversed(entries)]
    assert got == [
        ("set-status", 1, {"status": "OnHold", "where": 'Sku == "1"'}),
        ("edit", 1, {"ids": [ids[0]], "body": True, "priority": 3}),
        ("delete", 1, {"ids": [ids[2]]}),
        ("delete", 1, {"ids": [ids[3], 999_999]}),
        ("cancel", 1, {"ids": [ids[4]]}),
        ("cancel", 1, {"trackingId": str(tracking)}),
        ("purge", 2, {"statuses": ["Cancelled"]}),
        ("pause", None, None),
        ("resume", None, None),
        ("set-default-status", None, {"status": "Paused"}),
        ("run-schedule", 1, {"schedule": "nightly"}),
        ("set-status", 1, {"status": "Pending", "ids": [ids[1]]}),
    ]
    newest = entries[0]
    assert (newest.who, newest.via, newest.address, newest.queue) == (
        "admin token",
        "api",
        "127.0.0.1",
        "orders",
    )
    assert {(e.who, e.via, e.address) for e in entries[1:]} == {("alice", "cli", None)}
    assert entries == sorted(entries, key=lambda e: e.id, reverse=True)
    assert all(e.at <= queue.clock() + timedelta(seconds=1) for e in entries)


def test_nothing_is_recorded_without_an_actor_or_when_the_change_fails(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue("orders")
    first = queue.enqueue({"n": 1})
    queue.set_status("OnHold", ids=[first.id or 0])  # a library caller: no actor
    queue.enqueue({"n": 2})
    [leased] = queue.lease("w1", 1).messages
    with acting_as(ALICE):
        assert queue.set_status("Error", from_status="OnHold", dry_run=True) == 1
        with pytest.raises(Conflict):
            queue.delete(leased.id)  # leased: refused, rolled back with its entry
    assert database.audit_entries() == []


def test_a_change_naming_thousands_of_long_ids_is_recorded_in_short(
    database: Database, make_queue: MakeQueue
) -> None:
    """Issue 44 (L1): on MariaDB, cancelling 4,010 selected ids of 19 digits failed whole: the
    audit row's target overflowed its TEXT column."""
    queue = make_queue("orders")
    first = queue.enqueue({"n": 1}).id or 0
    ids = [first, *range(10**18, 10**18 + 4_009)]
    with acting_as(ALICE):
        assert queue.cancel_many(ids) == 1
    [entry] = database.audit_entries()
    assert (entry.action, entry.rows) == ("cancel", 1)
    assert entry.target == {"ids": ids[: audit.LISTED_IDS], "truncated": {"ids": 4_010}}


def test_a_hostile_predicate_is_stored_as_text(database: Database, make_queue: MakeQueue) -> None:
    queue = make_queue("orders")
    queue.enqueue({"Sku": "1"})
    with acting_as(ALICE):
        assert queue.set_status("OnHold", where=HOSTILE) == 0
    [entry] = database.audit_entries(queue="orders")
    assert entry.target == {"status": "OnHold", "where": HOSTILE}
    assert queue.count() == 1


def test_entries_page_back_by_queue(database: Database, make_queue: MakeQueue) -> None:
    make_queue("orders")
    make_queue("other")
    with acting_as(ALICE):
        for _ in range(3):
            database.pause("orders")
            database.pause("other")
    assert len(database.audit_entries()) == 6
    newest_two = database.audit_entries(queue="orders", limit=2)
    assert [e.queue for e in newest_two] == ["orders", "orders"]
    older = database.audit_entries(queue="orders", before_id=newest_two[-1].id)
    assert len(older) == 1 and older[0].id < newest_two[-1].id
    with pytest.raises(InvalidInput, match="limit must be 1 to 1000"):
        database.audit_entries(limit=0)
    with pytest.raises(InvalidInput):
        database.audit_entries(queue="Not A Queue")


def test_entries_are_purged_by_age(database: Database, make_queue: MakeQueue) -> None:
    make_queue("orders")
    with acting_as(ALICE):
        for _ in range(3):
            database.pause("orders")
    assert audit.purge_older(database, None) == 0  # forever
    assert audit.purge_older(database, timedelta(days=1)) == 0
    # Issue 44 (M3): any worker purges the whole trail; one asked to keep it 0.0000001 days
    # erased every entry. No purge takes entries younger than a day.
    with pytest.raises(InvalidInput, match="kept at least 1 day"):
        audit.purge_older(database, timedelta(hours=23))
    backdate(database, timedelta(days=2))
    assert audit.purge_older(database, timedelta(days=1), batch=2) == 3
    assert database.audit_entries() == []


def test_applies_and_queue_deletions_are_recorded(
    database: Database, make_queue: MakeQueue
) -> None:
    """Issue 44 (M4): the CLI's queue apply (a lowered retention deletes messages) and queue
    delete --drop-table (5 messages gone) left no entry, though every CLI change is recorded."""
    with acting_as(ALICE):
        database.apply(QueueResource.from_name("orders", keep_processed_for="7d"))
        queue = database.queue("orders")
        for n in range(5):
            queue.enqueue({"n": n})
        database.apply(QueueResource.from_name("orders", keep_processed_for="1h"))
        database.apply(QueueResource.from_name("orders", keep_processed_for="1h"))  # unchanged
        assert database.delete_queue("orders", drop_table=True)
    entries = [(e.action, e.queue, e.target, e.rows) for e in reversed(database.audit_entries())]
    assert entries == [
        ("apply", "orders", {"created": True}, None),
        ("apply", "orders", {"changed": {"keepProcessedFor": {"from": "7d", "to": "1h"}}}, None),
        ("delete-queue", "orders", {"dropTable": True}, 5),
    ]
    assert {(e.who, e.via) for e in database.audit_entries()} == {("alice", "cli")}


def test_replaced_messages_and_publishes_are_recorded(
    database: Database, make_queue: MakeQueue
) -> None:
    """Issue 44 (M4): enqueueing a Processed message's id again replaced its body, and a publish
    enqueued into every subscribed queue, with no entry, though every CLI change is recorded."""
    queue = make_queue("orders", keep_processed_for="7d", subscriptions=[{"topic": "sales"}])
    make_queue("invoices", subscriptions=[{"topic": "sales", "where": "Total > 100"}])
    queue.enqueue({"n": 1}, message_id="A")
    [leased] = queue.lease("w1", 1).messages
    queue.complete("w1", [Completion(leased)])
    database.publish("sales", {"Total": 5})  # a library caller: no actor, no entry
    with acting_as(ALICE):
        assert queue.enqueue({"n": 2}, message_id="B").outcome == "inserted"  # nothing replaced
        assert queue.enqueue({"n": 1, "again": True}, message_id="A").outcome == "updated"
        database.publish("sales", {"Total": 500}, message_id="S-1")
        database.publish("sales", {"Total": 5})
    entries = [(e.action, e.queue, e.target, e.rows) for e in reversed(database.audit_entries())]
    assert entries == [
        ("replace", "orders", {"message_ids": ["A"]}, 1),
        (
            "publish",
            None,
            {"topic": "sales", "message_id": "S-1", "queues": ["invoices", "orders"]},
            2,
        ),
        ("publish", None, {"topic": "sales", "queues": ["orders"]}, 1),
    ]
