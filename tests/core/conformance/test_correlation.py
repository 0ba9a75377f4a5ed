"""The caller's correlation id and label: given at enqueue, stored, updated by a re-enqueue, found
across queues, filtered on in a queue's list; the lease batch keeps its own id; and the
migration that adds both to a table of schema version 5.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tablequeue import Completion, Database, NewMessage
from tablequeue.errors import InvalidInput
from tablequeue.spec import QueueResource
from tablequeue.storage.schema import SCHEMA_VERSION, correlation_index_name, migrate

from .helpers import MakeQueue


def test_enqueue_stores_both_and_a_re_enqueue_updates_them(make_queue: MakeQueue) -> None:
    queue = make_queue()
    first = queue.enqueue({"n": 1}, message_id="m1", correlation_id="order-7", label="Order 7")
    stored = queue.get(first.id or 0)
    assert (stored.app_correlation_id, stored.label) == ("order-7", "Order 7")
    assert stored.to_json()["correlationId"] == "order-7"
    assert stored.to_json()["label"] == "Order 7"
    queue.enqueue({"n": 2}, message_id="m1", correlation_id="order-8", label="Ünïcode 8")
    again = queue.get(first.id or 0)
    assert (again.app_correlation_id, again.label) == ("order-8", "Ünïcode 8")
    queue.enqueue({"n": 3}, message_id="m1")  # given none: none, like the body
    assert (queue.get(first.id or 0).app_correlation_id, queue.get(first.id or 0).label) == (
        None,
        None,
    )


def test_a_batch_carries_each_message_s_own(make_queue: MakeQueue) -> None:
    queue = make_queue()
    done = queue.enqueue_many(
        [NewMessage(message={"n": n}, correlation_id=f"c{n % 2}", label=f"#{n}") for n in range(4)]
    )
    stored = [queue.get(e.id or 0) for e in done]
    assert [(m.app_correlation_id, m.label) for m in stored] == [
        ("c0", "#0"),
        ("c1", "#1"),
        ("c0", "#2"),
        ("c1", "#3"),
    ]


def test_the_lease_batch_id_is_its_own(make_queue: MakeQueue) -> None:
    queue = make_queue()
    queue.enqueue({"n": 1}, correlation_id="app-1", label="one")
    batch = queue.lease("w1", 5)
    [m] = batch.messages
    assert m.app_correlation_id == "app-1" and m.label == "one"
    assert m.correlation_id == batch.correlation_id != "app-1"
    shown = m.to_json()
    assert shown["leaseBatchId"] == batch.correlation_id and shown["correlationId"] == "app-1"


def test_find_by_correlation_id_across_queues_and_filter_a_queue(
    database: Database, make_queue: MakeQueue
) -> None:
    orders, mails = make_queue("orders"), make_queue("mails")
    a = orders.enqueue({"n": 1}, correlation_id="checkout-42")
    b = mails.enqueue({"n": 2}, correlation_id="checkout-42", label="receipt")
    orders.enqueue({"n": 3}, correlation_id="checkout-43")
    found = database.find_messages("checkout-42")
    assert sorted((name, m.id) for name, m in found) == [("mails", b.id), ("orders", a.id)]
    assert {m.label for _, m in found} == {None, "receipt"}
    assert [m.id for m in orders.messages(correlation_id="checkout-42")] == [a.id]
    assert orders.messages(correlation_id="nobody") == []
    own = orders.enqueue({"n": 4}, message_id="checkout-42", correlation_id="checkout-42")
    found = database.find_messages("checkout-42")  # by message id and correlation id: once
    assert sorted(m.id for name, m in found if name == "orders") == sorted([a.id or 0, own.id or 0])


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("correlation_id", "", "at least 1 character"),
        ("correlation_id", "x" * 129, "at most 128 characters"),
        ("correlation_id", "a\nb", "control characters"),
        ("label", "x" * 201, "at most 200 characters"),
        ("label", "tab\there", "control characters"),
    ],
)
def test_bad_values_are_refused_naming_the_field(
    make_queue: MakeQueue, field: str, value: str, problem: str
) -> None:
    queue = make_queue()
    with pytest.raises((InvalidInput, ValueError)) as raised:
        queue.enqueue({"n": 1}, **{field: value})
    text = str(raised.value)
    assert problem in text and field in text
    assert queue.messages() == []


def test_apply_migrates_a_version_5_table_and_keeps_its_messages(database: Database) -> None:
    resource = QueueResource.from_name("old", keep_processed_for="7d")
    database.apply(resource)
    queue = database.queue("old")
    kept = queue.enqueue({"n": 1}, message_id="k1")
    with database.transaction() as connection:  # version 5's table, by hand
        # SQLite drops no indexed column; SQLAlchemy spells DROP INDEX for each engine.
        old_table = sa.Table("old", sa.MetaData(), sa.Column("app_correlation_id", sa.String()))
        sa.Index(correlation_index_name("old"), old_table.c.app_correlation_id).drop(connection)
        connection.exec_driver_sql("ALTER TABLE old DROP COLUMN app_correlation_id")
        connection.exec_driver_sql("ALTER TABLE old DROP COLUMN label")
        connection.execute(database.registry.update().values(schema_version=5))

    assert database.apply(resource) == "updated"
    [row] = database.queues()
    assert row["schema_version"] == SCHEMA_VERSION
    inspector = sa.inspect(database.engine)
    columns = {c["name"]: c for c in inspector.get_columns("old")}
    assert columns["app_correlation_id"]["nullable"] and columns["label"]["nullable"]
    assert correlation_index_name("old") in {i["name"] for i in inspector.get_indexes("old")}
    assert database.apply(resource) == "unchanged"
    queue = database.queue("old")
    with database.transaction() as connection:  # a second run adds nothing
        migrate(connection, queue.table, 5)
    old = queue.get(kept.id or 0)
    assert old.message == {"n": 1} and (old.app_correlation_id, old.label) == (None, None)
    queue.enqueue({"n": 2}, message_id="k1", correlation_id="c-1", label="now labelled")
    again = queue.get(kept.id or 0)
    assert (again.version, again.app_correlation_id, again.label) == (2, "c-1", "now labelled")
    [m] = queue.lease("w1", 5).messages
    assert m.id == kept.id and queue.complete("w1", [Completion(m)]).processed == 1
