"""Defects found from outside (issue 17): two Queue resources never share a table, delete drops
only what the deleting resource owns, a table that is not a queue table is never adopted, and a
registry of schema version 2 is migrated in place."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from tablequeue import Database
from tablequeue.cli import main
from tablequeue.errors import NotAQueueTable, QueueNotFound, QueueOwnedElsewhere
from tablequeue.spec import QueueResource
from tablequeue.storage.schema import SCHEMA_VERSION
from tests.support.snapshot import snapshot


def owners(database: Database) -> dict[str, str | None]:
    registry = database.registry
    with database.transaction() as connection:
        rows = connection.execute(sa.select(registry.c.name, registry.c.owner))
        return {name: owner for name, owner in rows}


def test_a_second_namespace_cannot_claim_a_queue_and_its_delete_drops_nothing(
    database: Database,
) -> None:
    resource = QueueResource.from_name("orders")
    assert database.apply(resource, owner="team-a/orders") == "created"
    database.queue("orders").enqueue({"n": 1})
    before = snapshot(database)
    with pytest.raises(QueueOwnedElsewhere, match="belongs to Queue team-a/orders"):
        database.apply(resource, owner="team-b/orders")
    assert database.delete_queue("orders", drop_table=True, owner="team-b/orders") is False
    assert snapshot(database) == before
    assert database.apply(resource, owner="team-a/orders") == "unchanged"
    assert database.delete_queue("orders", drop_table=True, owner="team-a/orders") is True
    assert not sa.inspect(database.engine).has_table("orders")


def test_an_unowned_queue_is_claimed_by_the_first_resource_and_kept_by_the_cli(
    database: Database,
) -> None:
    resource = QueueResource.from_name("orders")
    database.apply(resource)
    assert owners(database) == {"orders": None}
    assert database.apply(resource, owner="team-a/orders") == "updated"
    assert database.apply(resource) == "unchanged"  # the CLI keeps the recorded owner
    assert owners(database) == {"orders": "team-a/orders"}
    with pytest.raises(QueueOwnedElsewhere):
        database.apply(resource, owner="team-b/orders")


def test_the_operator_reads_only_a_queue_its_resource_may_own(database: Database) -> None:
    """Issue 29: the operator's timer checks this before it reads a queue for a Queue."""
    with pytest.raises(QueueNotFound):
        database.check_owner("orders", "team-a/orders")  # no registry yet
    resource = QueueResource.from_name("orders")
    database.apply(resource)
    database.check_owner("orders", "team-b/orders")  # unowned: anyone's to claim
    database.apply(resource, owner="team-a/orders")
    database.check_owner("orders", "team-a/orders")
    with pytest.raises(QueueOwnedElsewhere, match="belongs to Queue team-a/orders"):
        database.check_owner("orders", "team-b/orders")
    with pytest.raises(QueueNotFound):
        database.check_owner("mail", "team-a/mail")


def test_a_table_that_is_not_a_queue_table_is_never_adopted(
    db_url: str, database: Database, tmp_path: Path
) -> None:
    with database.transaction() as connection:
        connection.exec_driver_sql("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)")
        connection.exec_driver_sql("INSERT INTO users VALUES (1, 'a@example.com')")
    before = snapshot(database)
    with pytest.raises(NotAQueueTable, match="table 'users' exists and is not a queue table"):
        database.apply(QueueResource.from_name("signups", table="users"))
    resource = tmp_path / "queue.yaml"
    resource.write_text(
        "apiVersion: tablequeue.dev/v1\nkind: Queue\nmetadata:\n  name: signups\n"
        "spec:\n  table: users\n"
    )
    result = CliRunner().invoke(
        main, ["queue", "apply", "-f", str(resource)], env={"TABLEQUEUE_DB": db_url}
    )
    assert result.exit_code == 1 and result.output.startswith("error: table 'users' exists")
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    # tablequeue's own shared tables (the registry, schedules, subscriptions, rate limits) may
    # be made; nothing else changes.
    assert {k: v for k, v in snapshot(database).items() if not k.startswith("tablequeue_")} == {
        k: v for k, v in before.items() if not k.startswith("tablequeue_")
    }
    assert database.queues() == []


def test_a_version_2_registry_is_migrated_and_serves_readers_before_that(
    database: Database, make_queue: Callable[..., object]
) -> None:
    assert SCHEMA_VERSION == 7
    resource = QueueResource.from_name("orders")
    database.apply(resource)
    with database.transaction() as connection:  # the registry as version 2 made it
        quote = connection.dialect.identifier_preparer.quote
        connection.exec_driver_sql(f"ALTER TABLE tablequeue_queues DROP COLUMN {quote('owner')}")
        connection.execute(database.registry.update().values(schema_version=2))
    columns = {c["name"] for c in sa.inspect(database.engine).get_columns("tablequeue_queues")}
    assert "owner" not in columns
    queue = database.queue("orders")  # a new worker or API before the operator migrates
    queue.enqueue({"n": 1})
    assert [row["name"] for row in database.queues()] == ["orders"]
    assert database.apply(resource, owner="team-a/orders") == "updated"
    [row] = database.queues()
    assert row["schema_version"] == SCHEMA_VERSION
    assert owners(database) == {"orders": "team-a/orders"}
    assert database.queue("orders").count() == 1
