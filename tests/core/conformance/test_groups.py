"""Ordered groups (`spec.groups`): messages of one group key are leased in id order, at most the
group's concurrency at once; other keys and keyless messages run beside them.

Part of the conformance suite: every test runs on every engine (`db_url`). Real worker processes
are in tests/worker/test_groups.py.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from tablequeue import Completion, Database, Failure, NewMessage, Queue
from tablequeue.errors import InvalidInput
from tablequeue.spec import QueueResource
from tablequeue.storage.schema import SCHEMA_VERSION, group_index_name, migrate

from .helpers import MakeQueue, lease_at_once_behind_the_registry_row, statuses

ONE = {"concurrency": 1}


def enqueue(queue: Queue, *keys: str | None, **options: Any) -> list[int]:
    sent = [NewMessage(message={"n": n}, group_key=key, **options) for n, key in enumerate(keys)]
    return [result.id or 0 for result in queue.enqueue_many(sent)]


def leased(queue: Queue, owner: str = "w", batch: int = 100) -> list[int]:
    return sorted(m.id or 0 for m in queue.lease(owner, batch).messages)


def test_one_key_runs_one_at_a_time_in_id_order_beside_other_keys_and_keyless_messages(
    make_queue: MakeQueue,
) -> None:
    queue = make_queue(groups=ONE)
    a1, b1, a2, free1, a3, b2, free2 = enqueue(queue, "a", "b", "a", None, "a", "b", None)
    assert leased(queue) == [a1, b1, free1, free2]  # one per key, every keyless one
    assert leased(queue) == []  # a and b each have one Leased
    [first] = [m for m in queue.messages() if m.id == a1]
    assert first.group_key == "a" and first.to_json()["groupKey"] == "a"
    queue.complete("w", [Completion(first)])
    assert leased(queue) == [a2]  # the next of a, not a3
    b_first = queue.get(b1)
    queue.complete("w", [Completion(b_first)])
    assert leased(queue) == [b2]
    queue.complete("w", [Completion(queue.get(a2))])
    assert leased(queue) == [a3]


def test_a_concurrency_of_two_leases_the_first_two_of_a_key(make_queue: MakeQueue) -> None:
    queue = make_queue(groups={"concurrency": 2})
    ids = enqueue(queue, "a", "a", "a", "a", "b")
    assert leased(queue) == [ids[0], ids[1], ids[4]]
    assert leased(queue) == []
    queue.complete("w", [Completion(queue.get(ids[1]))])  # the second finished first
    assert leased(queue) == [ids[2]]
    assert leased(queue) == []


def test_a_batch_of_one_takes_heads_in_lease_order(make_queue: MakeQueue) -> None:
    queue = make_queue(groups=ONE)
    a1, a2 = enqueue(queue, "a", "a")
    (high,) = enqueue(queue, "a", priority=5)  # priority never jumps its group's order
    assert leased(queue, batch=1) == [a1]
    assert leased(queue, batch=1) == []
    queue.complete("w", [Completion(queue.get(a1))])
    assert leased(queue, batch=1) == [a2]
    queue.complete("w", [Completion(queue.get(a2))])
    assert leased(queue, batch=1) == [high]


def test_the_key_comes_from_the_body_path_unless_given(make_queue: MakeQueue) -> None:
    queue = make_queue(groups={"keyPath": "Customer.Id"})
    bodies: list[Any] = [
        {"Customer": {"Id": "c-7"}},
        {"Customer": {"Id": 7}},
        {"Customer": {"Id": 7.5}},
        {"Customer": {"Id": True}},  # not a string or number: no group
        {"Customer": {}},
        [1, 2],
        {"Customer": {"Id": "c-7"}},
    ]
    ids = [queue.enqueue(body).id or 0 for body in bodies]
    given = queue.enqueue({"Customer": {"Id": "c-7"}}, group_key="mine").id or 0
    keys = {m.id: m.group_key for m in queue.messages()}
    assert [keys[i] for i in ids] == ["c-7", "7", "7.5", None, None, None, "c-7"]
    assert keys[given] == "mine"
    assert leased(queue) == sorted([*ids[:6], given])  # the second c-7 waits
    with pytest.raises(InvalidInput, match=r"group key at body path Customer\.Id: 201 char"):
        queue.enqueue({"Customer": {"Id": "x" * 201}})
    with pytest.raises(InvalidInput, match=r"group key at body path Customer\.Id: .*control"):
        queue.enqueue({"Customer": {"Id": "a\nb"}})


@pytest.mark.parametrize(
    ("value", "problem"),
    [("", "at least 1 character"), ("x" * 201, "at most 200 characters"), ("a\tb", "control")],
)
def test_a_bad_group_key_is_refused_naming_the_field(
    make_queue: MakeQueue, value: str, problem: str
) -> None:
    queue = make_queue(groups=ONE)
    with pytest.raises((InvalidInput, ValueError)) as raised:
        queue.enqueue({"n": 1}, group_key=value)
    assert problem in str(raised.value) and "group_key" in str(raised.value)
    assert queue.messages() == []


def test_a_retry_and_a_message_scheduled_later_hold_their_group(make_queue: MakeQueue) -> None:
    queue = make_queue(groups=ONE, max_attempts=3)
    (later,) = enqueue(queue, "a", after=3600)
    (behind,) = enqueue(queue, "a")
    (b1, b2) = enqueue(queue, "b", "b")
    assert leased(queue) == [b1]  # `later` is not due, and holds `behind`
    queue.fail("w", [Failure(queue.get(b1), "boom")])  # retried later
    assert statuses(queue)[b1] in ("Pending", "Sleeping")
    assert leased(queue) == []  # b2 waits for b1's retry
    queue.set_status("Pending", ids=[later, b1])  # due now
    assert leased(queue) == [later, b1]
    queue.complete("w", [Completion(queue.get(later)), Completion(queue.get(b1))])
    assert leased(queue) == [behind, b2]


@pytest.mark.parametrize("final", ["Error", "Abandoned"])
def test_on_failure_release_lets_the_next_run(make_queue: MakeQueue, final: str) -> None:
    queue = make_queue(groups=ONE)
    first, second = enqueue(queue, "a", "a")
    assert leased(queue) == [first]
    if final == "Error":
        queue.fail("w", [Failure(queue.get(first), "boom", permanent=True)])
    else:
        queue.set_status(final, ids=[first], force=True)
    assert statuses(queue)[first] == final
    assert leased(queue) == [second]


@pytest.mark.parametrize("final", ["Error", "Abandoned"])
def test_on_failure_hold_waits_for_a_person(make_queue: MakeQueue, final: str) -> None:
    queue = make_queue(groups={"onFailure": "hold"})
    first, second, third, fourth = enqueue(queue, "a", "a", "a", "a")
    (other,) = enqueue(queue, "b")
    assert leased(queue) == [first, other]
    if final == "Error":
        queue.fail("w", [Failure(queue.get(first), "boom", permanent=True)])
    else:
        queue.set_status(final, ids=[first], force=True)
    assert leased(queue) == []  # held
    queue.set_status("Pending", ids=[first])  # a person retries it
    assert leased(queue) == [first]
    queue.fail("w", [Failure(queue.get(first), "again", permanent=True)])
    queue.set_status("Cancelled", ids=[first])  # ... or cancels it
    assert leased(queue) == [second]
    queue.fail("w", [Failure(queue.get(second), "boom", permanent=True)])
    assert leased(queue) == []
    queue.delete(second)  # ... or deletes it
    assert leased(queue) == [third]
    assert fourth not in leased(queue)


def test_groups_keep_to_a_global_concurrency_too(make_queue: MakeQueue) -> None:
    queue = make_queue(groups=ONE, global_concurrency=2)
    ids = enqueue(queue, "a", "a", "b", "c")
    assert leased(queue) == [ids[0], ids[2]]
    assert queue.lease("w", 10).at_concurrency_limit


@pytest.mark.parametrize("limit", [1, 2])
def test_connections_leasing_at_once_never_exceed_the_group_limit(
    database: Database, db_url: str, make_queue: MakeQueue, limit: int
) -> None:
    make_queue(groups={"concurrency": limit})
    queue = database.queue("orders")
    keys = [f"k{n % 3}" for n in range(30)]
    enqueue(queue, *keys)
    taken = lease_at_once_behind_the_registry_row(database, db_url, "orders")
    assert len(taken) == len(set(taken)) == 3 * limit  # the first of each of three keys
    by_key = {m.id: m.group_key for m in queue.messages(limit=100)}
    heads = {key: sorted(i for i in by_key if by_key[i] == key)[:limit] for key in set(keys)}
    assert sorted(taken) == sorted(i for ids in heads.values() for i in ids)


def test_a_handle_follows_groups_added_and_lifted_while_it_leases(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    ids = enqueue(queue, "a", "a", "a", "a")
    assert leased(queue, batch=1) == [ids[0]]  # no groups yet: keys are kept, not obeyed
    database.apply(QueueResource.from_name("orders", groups=ONE))
    assert database.flow_state("orders").group_limit == 1
    # This handle last saw no groups: the lease statement itself refuses, then it reads them.
    assert leased(queue) == []
    assert leased(queue) == []  # ids[0] holds the group
    database.apply(QueueResource.from_name("orders"))  # lifted
    assert not database.flow_state("orders").grouped
    assert leased(queue) == ids[1:]


def test_apply_migrates_a_version_6_table_and_keeps_its_messages(database: Database) -> None:
    resource = QueueResource.from_name("old", keep_processed_for="7d")
    database.apply(resource)
    queue = database.queue("old")
    kept = queue.enqueue({"n": 1}, message_id="k1", label="kept")
    with database.transaction() as connection:  # version 6's table and registry, by hand
        # SQLite drops no indexed column; SQLAlchemy spells DROP INDEX for each engine.
        old_table = sa.Table("old", sa.MetaData(), sa.Column("group_key", sa.String()))
        sa.Index(group_index_name("old"), old_table.c.group_key).drop(connection)
        connection.exec_driver_sql("ALTER TABLE old DROP COLUMN group_key")
        for column in ("group_limit", "group_hold"):
            connection.exec_driver_sql(f"ALTER TABLE tablequeue_queues DROP COLUMN {column}")
        connection.execute(database.registry.update().values(schema_version=6))

    grouped = QueueResource.from_name("old", keep_processed_for="7d", groups=ONE)
    assert database.apply(grouped) == "updated"
    [row] = database.queues()
    assert row["schema_version"] == SCHEMA_VERSION == 7
    inspector = sa.inspect(database.engine)
    columns = {c["name"]: c for c in inspector.get_columns("old")}
    assert columns["group_key"]["nullable"]
    assert group_index_name("old") in {i["name"] for i in inspector.get_indexes("old")}
    assert database.apply(grouped) == "unchanged"
    queue = database.queue("old")
    with database.transaction() as connection:  # a second run adds nothing
        migrate(connection, queue.table, 6)
    [message] = queue.messages()
    assert (message.id, message.message_id, message.label, message.group_key) == (
        kept.id,
        "k1",
        "kept",
        None,
    )
    a1, a2 = enqueue(queue, "a", "a")
    assert leased(queue) == [kept.id, a1]
    assert a2 not in leased(queue)
