"""Tables and the registry: apply, migrations, delete, handles of deleted queues.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tablequeue import Database, NewMessage
from tablequeue.dialects import Capabilities
from tablequeue.errors import Conflict, InvalidInput, QueueNotFound
from tablequeue.spec import QueueResource
from tablequeue.storage.schema import SCHEMA_VERSION

from .helpers import MakeQueue, lease_all


def test_apply_is_idempotent_and_records_the_queue(database: Database) -> None:
    resource = QueueResource.from_name("send-order-confirmation", category="Orders")
    assert database.apply(resource) == "created"
    assert database.apply(resource) == "unchanged"
    changed = QueueResource.from_name("send-order-confirmation", category="Sales")
    assert database.apply(changed) == "updated"
    [row] = database.queues()
    assert row["table_name"] == "send_order_confirmation"
    assert row["category"] == "Sales"
    assert row["schema_version"] == SCHEMA_VERSION
    assert sa.inspect(database.engine).has_table("send_order_confirmation")


def test_apply_migrates_a_version_1_table_and_keeps_its_messages(
    database: Database, capabilities: Capabilities
) -> None:
    if capabilities.first_schema_version > 1:
        pytest.skip("this engine never had version 1 tables")
    resource = QueueResource.from_name("old")
    database.apply(resource)
    queue = database.queue("old")
    kept = queue.enqueue({"n": 1}, message_id="k1")
    with database.transaction() as connection:  # version 1's indexes, by hand
        connection.exec_driver_sql("DROP INDEX old_message_id")
        connection.exec_driver_sql("CREATE UNIQUE INDEX old_message_id ON old (message_id)")
        connection.exec_driver_sql(
            "CREATE INDEX old_leases ON old (lease_expires_at) WHERE status = 'Leased'"
        )
        connection.execute(database.registry.update().values(schema_version=1))

    assert database.apply(resource) == "updated"
    [row] = database.queues()
    assert row["schema_version"] == SCHEMA_VERSION
    indexes = {i["name"]: i for i in sa.inspect(database.engine).get_indexes("old")}
    assert "old_leases" not in indexes and indexes["old_message_id"]["unique"]
    assert database.apply(resource) == "unchanged"
    queue = database.queue("old")
    assert queue.enqueue({"n": 2}, message_id="k1").outcome == "updated"
    assert queue.get(kept.id or 0).message == {"n": 2} and queue.count() == 1


def test_two_queues_cannot_share_a_table(database: Database) -> None:
    database.apply(QueueResource.from_name("a-queue", table="shared"))
    with pytest.raises(Conflict, match="already belongs to queue 'a-queue'"):
        database.apply(QueueResource.from_name("b-queue", table="shared"))


def test_unknown_queue_is_a_clear_error(database: Database) -> None:
    with pytest.raises(QueueNotFound, match="queue 'nope' does not exist"):
        database.queue("nope")


def test_delete_queue_keeps_or_drops_the_table(database: Database) -> None:
    database.apply(QueueResource.from_name("keep-me"))
    database.apply(QueueResource.from_name("drop-me"))
    database.delete_queue("keep-me", drop_table=False)
    database.delete_queue("drop-me", drop_table=True)
    inspector = sa.inspect(database.engine)
    assert inspector.has_table("keep_me")
    assert not inspector.has_table("drop_me")
    assert database.queues() == []


def test_a_kept_table_is_adopted_with_its_messages_when_applied_again(database: Database) -> None:
    """A kept table has no registry row: apply migrates it from the oldest version its engine
    had (on MariaDB it assumed version 1, whose migration MariaDB cannot run, and every later
    apply of the queue failed; a failed first apply keeps its table there too)."""
    resource = QueueResource.from_name("kept", indexes=[{"path": "n", "type": "number"}])
    database.apply(resource)
    kept = database.queue("kept").enqueue({"n": 1})
    database.delete_queue("kept", drop_table=False)
    assert database.apply(resource) == "created"
    queue = database.queue("kept")
    assert [m.id for m in queue.messages()] == [kept.id]
    assert queue.count(where="n == 1") == 1


def test_enqueue_through_a_handle_of_a_deleted_queue_is_a_clear_error(
    database: Database,
) -> None:
    database.apply(QueueResource.from_name("gone"))
    queue = database.queue("gone")
    database.delete_queue("gone", drop_table=False)
    with pytest.raises(QueueNotFound, match="queue 'gone' was deleted"):
        queue.enqueue({"n": 1})
    batch = [NewMessage(message={"n": 2}, status="Held"), NewMessage(message={"n": 3})]
    with pytest.raises(QueueNotFound, match="queue 'gone' was deleted"):
        queue.enqueue_many(batch)  # an explicit status too
    with database.transaction() as connection:
        assert connection.exec_driver_sql("SELECT count(*) FROM gone").scalar() == 0


def test_queues_with_the_longest_table_names_work(make_queue: MakeQueue) -> None:
    queue = make_queue("q" + "-x" * 31)  # 63 characters: the longest name
    assert len(queue.table.name) == 63
    assert queue.enqueue({"n": 1}).outcome == "inserted"
    assert lease_all(queue) != []


def test_a_declared_dialect_must_be_the_one_of_the_url(database: Database) -> None:
    def declaring(dialect: str) -> QueueResource:
        reference = {"secretRef": {"name": "db"}, "dialect": dialect}
        return QueueResource.from_name("declared", database=reference)

    engine = database.dialect.name
    other = "sqlite" if engine != "sqlite" else "postgresql"
    with pytest.raises(InvalidInput, match=f"spec.database.dialect is '{other}' but the database"):
        database.apply(declaring(other))
    assert database.queues() == []
    assert database.apply(declaring({"mariadb": "mysql"}.get(engine, engine))) == "created"
