"""Publish/subscribe: queues subscribe to topics in their spec (optionally with a predicate);
publishing enqueues one message into each matching queue, all in one transaction.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tablequeue import Database, Delivery
from tablequeue.errors import InvalidInput, PredicateError, SpecError
from tablequeue.spec import QueueResource
from tests.support.application import ORDERS, application_engine, order_ids

from .helpers import MakeQueue


class Rollback(Exception):
    """Raised inside the application's transaction to roll it back."""


def _outcomes(deliveries: list[Delivery]) -> dict[str, str]:
    return {d.queue: d.outcome for d in deliveries}


def _bodies(database: Database, name: str) -> list[object]:
    return [m.message for m in database.queue(name).messages()]


def test_publish_delivers_to_each_subscriber_its_predicate_lets_through(
    database: Database, make_queue: MakeQueue
) -> None:
    make_queue("all-orders", subscriptions=[{"topic": "order-placed"}])
    make_queue("big-orders", subscriptions=[{"topic": "order-placed", "where": "Total > 100"}])
    make_queue(
        "norway",
        subscriptions=[
            {"topic": "order-placed", "where": 'Address.Country == "NO" and not Test == true'},
            {"topic": "order-cancelled"},
        ],
    )
    make_queue("unrelated")
    small = database.publish("order-placed", {"Id": 1, "Total": 50, "Address": {"Country": "NO"}})
    assert _outcomes(small) == {
        "all-orders": "inserted",
        "big-orders": "filtered",
        "norway": "inserted",
    }
    assert [d.queue for d in small] == ["all-orders", "big-orders", "norway"]
    filtered = small[1]
    assert filtered.id is None and filtered.tracking_id is None
    big = database.publish("order-placed", {"Id": 2, "Total": 500.5, "Test": True})
    assert _outcomes(big) == {
        "all-orders": "inserted",
        "big-orders": "inserted",
        "norway": "filtered",
    }
    assert [m["Id"] for m in _bodies(database, "all-orders")] == [1, 2]  # type: ignore[index]
    assert _bodies(database, "big-orders") == [{"Id": 2, "Total": 500.5, "Test": True}]
    assert [m["Id"] for m in _bodies(database, "norway")] == [1]  # type: ignore[index]
    assert _bodies(database, "unrelated") == []
    [delivered] = [d for d in big if d.queue == "big-orders"]
    stored = database.queue("big-orders").get(delivered.id or 0)
    assert stored.tracking_id == delivered.tracking_id and stored.status == delivered.status


def test_publish_options_are_those_of_enqueue(database: Database, make_queue: MakeQueue) -> None:
    make_queue("a", subscriptions=[{"topic": "price-changed"}], default_status="OnHold")
    make_queue("b", subscriptions=[{"topic": "price-changed"}], idempotent=True)
    first = database.publish(
        "price-changed", {"Sku": "1", "Price": 10}, message_id="sku-1", headers={"src": "erp"}
    )
    assert _outcomes(first) == {"a": "inserted", "b": "inserted"}
    assert {d.status for d in first} == {"OnHold", "Pending"}
    again = database.publish("price-changed", {"Price": 10, "Sku": "1"}, message_id="sku-1")
    assert _outcomes(again) == {"a": "updated", "b": "discarded"}  # b: an identical body
    [stored] = database.queue("a").messages()
    assert stored.message_id == "sku-1" and stored.version == 2
    assert database.queue("b").messages()[0].headers == {"src": "erp"}


def test_a_topic_nobody_subscribes_to_delivers_nothing(
    database: Database, make_queue: MakeQueue
) -> None:
    assert database.publish("nobody-listens", {"n": 1}) == []  # not even a registry yet
    make_queue("a", subscriptions=[{"topic": "something-else"}])
    assert database.publish("nobody-listens", {"n": 1}) == []
    assert _bodies(database, "a") == []


def test_subscriptions_follow_the_spec_and_the_queue(
    database: Database, make_queue: MakeQueue
) -> None:
    make_queue("a", subscriptions=[{"topic": "t1"}])
    make_queue("b", subscriptions=[{"topic": "t1", "where": "n > 1"}])
    assert _outcomes(database.publish("t1", {"n": 1})) == {"a": "inserted", "b": "filtered"}
    make_queue("a", subscriptions=[{"topic": "t2"}])  # re-applied: t1 dropped, t2 taken
    make_queue("b", subscriptions=[{"topic": "t1", "where": "n < 2"}])
    assert _outcomes(database.publish("t1", {"n": 1})) == {"b": "inserted"}
    assert _outcomes(database.publish("t2", {"n": 1})) == {"a": "inserted"}
    database.delete_queue("a", drop_table=True)
    assert database.publish("t2", {"n": 1}) == []


def test_publish_is_one_transaction_in_the_callers_transaction(
    database: Database, make_queue: MakeQueue
) -> None:
    make_queue("mail", subscriptions=[{"topic": "order-placed"}])
    make_queue("audit", subscriptions=[{"topic": "order-placed"}])
    app = application_engine(database.url)
    try:
        with pytest.raises(Rollback), app.connect() as connection, connection.begin():
            connection.execute(ORDERS.insert().values(id=1, total=1))
            assert len(database.publish("order-placed", {"Id": 1}, connection=connection)) == 2
            raise Rollback
        assert _bodies(database, "mail") == _bodies(database, "audit") == []
        with app.connect() as connection, connection.begin():
            connection.execute(ORDERS.insert().values(id=2, total=2))
            database.publish("order-placed", {"Id": 2}, connection=connection)
        assert order_ids(app) == [2]
    finally:
        app.dispose()
    assert _bodies(database, "mail") == _bodies(database, "audit") == [{"Id": 2}]


def test_publish_into_a_queue_whose_table_is_gone_writes_nowhere(
    database: Database, make_queue: MakeQueue
) -> None:
    """A failure in one subscribed queue undoes the deliveries into the others."""
    make_queue("a", subscriptions=[{"topic": "t"}])
    make_queue("b", subscriptions=[{"topic": "t"}])
    with database.transaction() as connection:
        connection.execute(sa.text("DROP TABLE b"))  # a table dropped behind tablequeue's back
    with pytest.raises(sa.exc.DBAPIError):
        database.publish("t", {"n": 1})
    assert _bodies(database, "a") == []


def test_bad_topics_and_predicates_are_refused(database: Database, make_queue: MakeQueue) -> None:
    with pytest.raises(InvalidInput, match="invalid topic name 'Order Placed'"):
        database.publish("Order Placed", {"n": 1})
    with pytest.raises(PredicateError, match=r"subscriptions\[0\] \(topic 't'\).*column"):
        database.apply(
            QueueResource.from_name("a", subscriptions=[{"topic": "t", "where": "Total >"}])
        )
    twice = [{"topic": "t"}, {"topic": "t", "where": "n > 1"}]
    with pytest.raises(SpecError, match="topic 't' is subscribed twice"):
        database.apply(QueueResource.from_name("a", subscriptions=twice))
    assert database.queues() == []
