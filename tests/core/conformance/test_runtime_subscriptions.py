"""Runtime subscriptions: made and ended through `Database.subscribe`/`unsubscribe` for queues
whose spec allows them, kept by apply, skipped by publishing once expired (database clock) and
deleted by the queue's housekeeping; an older subscriptions table is migrated by apply.

Part of the conformance suite: every test runs on every engine (`db_url`). Nothing sleeps: an
expiry is moved into the past with the database's own clock.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from tablequeue import Actor, Database, Delivery, acting_as, connect
from tablequeue.errors import (
    Conflict,
    InvalidInput,
    PredicateError,
    QueueNotFound,
    RuntimeSubscriptionsNotAllowed,
    SubscriptionNotFound,
)
from tablequeue.spec import QueueResource
from tablequeue.storage.schedules import database_now
from tablequeue.storage.schema import SUBSCRIPTIONS_TABLE

from .helpers import MakeQueue

ALLOWED: dict[str, Any] = {"allowed": True}


def _outcomes(deliveries: list[Delivery]) -> dict[str, str]:
    return {d.queue: d.outcome for d in deliveries}


def _listed(database: Database, topic: str | None = None) -> list[tuple[str, str, str]]:
    return [(s.topic, s.queue, s.origin) for s in database.list_subscriptions(topic)]


def _stored_rows(database: Database) -> list[tuple[str, str]]:
    table = database.subscriptions
    with database.transaction() as connection:
        rows = connection.execute(sa.select(table.c.topic, table.c.queue_name))
        return sorted((row.topic, row.queue_name) for row in rows)


def _expire_now(database: Database, topic: str, queue: str) -> None:
    """Move a subscription's expiry one second before the database's clock."""
    table = database.subscriptions
    past = database.dialect.seconds_from_now(sa.literal(-1.0))
    with database.transaction() as connection:
        connection.execute(
            sa.update(table)
            .where(table.c.topic == topic, table.c.queue_name == queue)
            .values(expires_at=past)
        )


def test_only_a_queue_whose_spec_allows_it_is_subscribed_at_runtime(
    database: Database, make_queue: MakeQueue
) -> None:
    make_queue("closed", subscriptions=[{"topic": "t1"}])
    with pytest.raises(
        RuntimeSubscriptionsNotAllowed,
        match=r"queue 'closed' does not allow runtime subscriptions.*runtimeSubscriptions\.allowed",
    ):
        database.subscribe("t2", "closed")
    make_queue("off", runtime_subscriptions={"allowed": False})
    with pytest.raises(RuntimeSubscriptionsNotAllowed, match="'off'"):
        database.subscribe("t2", "off")
    with pytest.raises(QueueNotFound, match="queue 'nowhere' does not exist"):
        database.subscribe("t2", "nowhere")
    with pytest.raises(InvalidInput, match="invalid topic name 'T 2'"):
        database.subscribe("T 2", "closed")
    make_queue("open", runtime_subscriptions=ALLOWED)
    with pytest.raises(PredicateError, match=r"^where: "):
        database.subscribe("t2", "open", where="Total >")
    assert _listed(database) == [("t1", "closed", "spec")]


def test_apply_keeps_runtime_subscriptions_and_deletion_removes_both(
    database: Database, make_queue: MakeQueue
) -> None:
    make_queue("mail", subscriptions=[{"topic": "t1"}], runtime_subscriptions=ALLOWED)
    made = database.subscribe("t2", "mail", where="n > 1")
    assert (made.origin, made.where, made.expires_at) == ("runtime", "n > 1", None)
    make_queue("mail", subscriptions=[{"topic": "t3"}], runtime_subscriptions=ALLOWED)
    assert _listed(database) == [("t2", "mail", "runtime"), ("t3", "mail", "spec")]
    assert _outcomes(database.publish("t2", {"n": 2})) == {"mail": "inserted"}
    assert _outcomes(database.publish("t2", {"n": 0})) == {"mail": "filtered"}
    assert database.publish("t1", {"n": 2}) == []

    # The spec taking the topic over replaces the runtime subscription (one per topic).
    make_queue("mail", subscriptions=[{"topic": "t2"}], runtime_subscriptions=ALLOWED)
    assert _listed(database) == [("t2", "mail", "spec")]
    assert _outcomes(database.publish("t2", {"n": 0})) == {"mail": "inserted"}

    database.subscribe("t4", "mail")
    make_queue("mail", subscriptions=[{"topic": "t2"}])  # no longer allowed: runtime ones end
    assert _listed(database) == [("t2", "mail", "spec")]

    make_queue("mail", subscriptions=[{"topic": "t2"}], runtime_subscriptions=ALLOWED)
    database.subscribe("t4", "mail")
    database.delete_queue("mail", drop_table=True)
    assert _stored_rows(database) == []
    assert database.publish("t4", {"n": 1}) == []


def test_one_subscription_per_topic_and_queue(database: Database, make_queue: MakeQueue) -> None:
    make_queue("mail", subscriptions=[{"topic": "t1"}], runtime_subscriptions=ALLOWED)
    with pytest.raises(Conflict, match="queue 'mail' subscribes to topic 't1' in its spec"):
        database.subscribe("t1", "mail")
    with pytest.raises(Conflict, match=r"'t1' in its spec\.subscriptions: remove it there"):
        database.unsubscribe("t1", "mail")
    with pytest.raises(SubscriptionNotFound, match="queue 'mail' has no runtime subscription"):
        database.unsubscribe("t2", "mail")
    with pytest.raises(QueueNotFound):
        database.unsubscribe("t2", "nowhere")

    database.subscribe("t2", "mail", where="n > 1")
    database.subscribe("t2", "mail")  # again: replaces it
    [again] = database.list_subscriptions("t2")
    assert again.where is None
    assert _outcomes(database.publish("t2", {"n": 0})) == {"mail": "inserted"}
    database.unsubscribe("t2", "mail")
    assert _listed(database) == [("t1", "mail", "spec")]
    assert database.publish("t2", {"n": 1}) == []


def test_expiries_are_bounded_by_the_specs_maximum(
    database: Database, make_queue: MakeQueue
) -> None:
    make_queue("mail", runtime_subscriptions={"allowed": True, "max_expiry": "1h"})
    with database.transaction() as connection:
        before = database_now(connection, database.dialect)
    defaulted = database.subscribe("t1", "mail")
    chosen = database.subscribe("t2", "mail", expires=timedelta(minutes=5))
    with database.transaction() as connection:
        after = database_now(connection, database.dialect)
    assert defaulted.expires_at is not None and chosen.expires_at is not None
    assert before + timedelta(hours=1) <= defaulted.expires_at <= after + timedelta(hours=1)
    assert before + timedelta(minutes=5) <= chosen.expires_at <= after + timedelta(minutes=5)
    [listed] = database.list_subscriptions("t2")
    assert abs(listed.expires_at - chosen.expires_at) < timedelta(milliseconds=2)  # type: ignore[operator]

    instant = after + timedelta(minutes=30)
    assert database.subscribe("t3", "mail", expires=instant).expires_at == instant
    with pytest.raises(InvalidInput, match=r"beyond queue 'mail'.*maxExpiry \(1h\)"):
        database.subscribe("t4", "mail", expires=timedelta(hours=2))
    with pytest.raises(InvalidInput, match="maxExpiry"):
        database.subscribe("t4", "mail", expires=after + timedelta(days=1))
    with pytest.raises(InvalidInput, match="is already past"):
        database.subscribe("t4", "mail", expires=datetime(2000, 1, 1, tzinfo=UTC))
    with pytest.raises(InvalidInput, match="has no time zone"):
        database.subscribe("t4", "mail", expires=datetime(2100, 1, 1))
    with pytest.raises(InvalidInput, match="above 0s"):
        database.subscribe("t4", "mail", expires=timedelta(0))
    assert [s.topic for s in database.list_subscriptions()] == ["t1", "t2", "t3"]

    make_queue("forever", runtime_subscriptions=ALLOWED)  # no maxExpiry: none by default
    assert database.subscribe("t1", "forever").expires_at is None
    far = database.subscribe("t2", "forever", expires=timedelta(days=3650)).expires_at
    assert far is not None and far > after + timedelta(days=3000)


def test_publish_skips_an_expired_subscription_and_housekeeping_deletes_it(
    database: Database, make_queue: MakeQueue
) -> None:
    mail = make_queue("mail", runtime_subscriptions=ALLOWED)
    make_queue("audit", subscriptions=[{"topic": "t1"}], runtime_subscriptions=ALLOWED)
    database.subscribe("t1", "mail", expires=timedelta(hours=1))
    database.subscribe("t2", "mail", expires=timedelta(hours=1))
    database.subscribe("t2", "audit", expires=timedelta(hours=1))
    assert _outcomes(database.publish("t1", {"n": 1})) == {"audit": "inserted", "mail": "inserted"}

    _expire_now(database, "t1", "mail")
    _expire_now(database, "t2", "audit")  # another queue's, of a topic mail keeps
    assert _outcomes(database.publish("t1", {"n": 2})) == {"audit": "inserted"}
    assert _outcomes(database.publish("t2", {"n": 2})) == {"mail": "inserted"}
    assert _listed(database) == [("t1", "audit", "spec"), ("t2", "mail", "runtime")]
    assert mail.count() == 2

    purged = mail.purge_retained("w1", batch=1)
    assert purged is not None and purged.subscriptions == 1
    assert _stored_rows(database) == [("t1", "audit"), ("t2", "audit"), ("t2", "mail")]
    purged = database.queue("audit").purge_retained("w1")
    assert purged is not None and purged.subscriptions == 1
    assert _stored_rows(database) == [("t1", "audit"), ("t2", "mail")]


def test_apply_migrates_a_subscriptions_table_made_before_runtime_subscriptions(
    db_url: str, database: Database, make_queue: MakeQueue
) -> None:
    make_queue("mail", subscriptions=[{"topic": "t1"}], runtime_subscriptions=ALLOWED)
    old = sa.Table(
        SUBSCRIPTIONS_TABLE,
        sa.MetaData(),
        sa.Column("topic", sa.String(63), primary_key=True),
        sa.Column("queue_name", sa.String(63), primary_key=True),
        sa.Column("where_text", sa.Text(), nullable=True),
    )
    with database.transaction() as connection:
        database.subscriptions.drop(connection)
        old.create(connection)
        connection.execute(old.insert().values(topic="t1", queue_name="mail", where_text="n > 1"))

    with connect(db_url) as upgraded:  # a newer tablequeue, before anything applied it
        assert _outcomes(upgraded.publish("t1", {"n": 2})) == {"mail": "inserted"}
        [listed] = upgraded.list_subscriptions()
        assert (listed.origin, listed.expires_at, listed.where) == ("spec", None, "n > 1")
        with pytest.raises(Conflict, match="predates runtime subscriptions: apply"):
            upgraded.subscribe("t2", "mail")

    with connect(db_url) as upgraded:
        resource = QueueResource.from_name(
            "mail",
            subscriptions=[{"topic": "t1", "where": "n > 1"}],
            runtime_subscriptions=ALLOWED,
        )
        upgraded.apply(resource)
        columns = sa.inspect(upgraded.engine).get_columns(SUBSCRIPTIONS_TABLE)
        assert {"origin", "expires_at"} <= {column["name"] for column in columns}
        upgraded.subscribe("t2", "mail", expires=timedelta(hours=1))
        assert _listed(upgraded) == [("t1", "mail", "spec"), ("t2", "mail", "runtime")]
        assert _outcomes(upgraded.publish("t1", {"n": 0})) == {"mail": "filtered"}


def test_an_expiry_past_the_calendar_is_a_clear_error(
    database: Database, make_queue: MakeQueue
) -> None:
    make_queue("forever", runtime_subscriptions=ALLOWED)
    with pytest.raises(InvalidInput, match="ends after the year 9999"):
        database.subscribe("t1", "forever", expires=timedelta(days=999_999_999))
    make_queue("long", runtime_subscriptions={"allowed": True, "max_expiry": "1000000w"})
    with pytest.raises(InvalidInput, match="ends after the year 9999"):
        database.subscribe("t1", "long")
    assert database.list_subscriptions() == []


def test_runtime_subscriptions_made_by_someone_are_in_the_audit_trail(
    database: Database, make_queue: MakeQueue
) -> None:
    make_queue("mail", runtime_subscriptions=ALLOWED)
    database.subscribe("t0", "mail")  # by the program itself: no actor, no entry
    with acting_as(Actor("alice", "cli")):
        database.subscribe("t1", "mail", where="n > 1")
        database.unsubscribe("t1", "mail")
        with pytest.raises(SubscriptionNotFound):
            database.unsubscribe("t1", "mail")
    entries = database.audit_entries(queue="mail")
    assert [(e.who, e.action, e.target, e.rows) for e in entries] == [
        ("alice", "unsubscribe", {"topic": "t1"}, 1),
        ("alice", "subscribe", {"topic": "t1", "where": "n > 1"}, 1),
    ]
