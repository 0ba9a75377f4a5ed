"""PostgreSQL: the single enqueue runs on psycopg directly (`tablequeue/dialects/driver.py`),
its statement compiled once per queue table and prepared on first use. On one pooled
connection (StaticPool), statements of several tables live side by side, and a queue table
dropped and created again, or altered by a migration, from another connection keeps working
(PostgreSQL re-plans a prepared statement after DDL on its tables)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
import sqlalchemy as sa

from tablequeue import Database, connect
from tablequeue.dialects.driver import DriverStatement
from tablequeue.spec import QueueResource


@pytest.fixture
def database(postgres_url: str) -> Iterator[Database]:
    with connect(postgres_url, poolclass=sa.pool.StaticPool) as db:  # one connection
        yield db


def _prepared_inserts(database: Database) -> list[str]:
    """The INSERT statements prepared on the pool's only connection."""
    with database.engine.connect() as connection:
        return list(
            connection.execute(
                sa.text(
                    "SELECT statement FROM pg_prepared_statements"
                    " WHERE statement LIKE 'INSERT INTO%'"
                )
            ).scalars()
        )


def _bodies(postgres_url: str, table: str) -> list[object]:
    with psycopg.connect(postgres_url) as other:
        rows = other.execute(f"SELECT message FROM {table} ORDER BY id").fetchall()  # noqa: S608
        return [row[0] for row in rows]


def test_each_queue_table_has_its_own_prepared_statement(
    database: Database, postgres_url: str
) -> None:
    for name in ("orders", "invoices"):
        database.apply(QueueResource.from_name(name))
    orders, invoices = database.queue("orders"), database.queue("invoices")
    for n in range(3):
        assert orders.enqueue({"order": n}).outcome == "inserted"
        assert invoices.enqueue({"invoice": n}, message_id=f"i{n}").outcome == "inserted"
    assert invoices.enqueue({"invoice": 9}, message_id="i0").outcome == "updated"

    prepared = _prepared_inserts(database)
    assert any(text.startswith("INSERT INTO orders ") for text in prepared), prepared
    assert any(text.startswith("INSERT INTO invoices ") for text in prepared), prepared
    assert _bodies(postgres_url, "orders") == [{"order": n} for n in range(3)]
    assert _bodies(postgres_url, "invoices") == [{"invoice": 9}, {"invoice": 1}, {"invoice": 2}]
    # Built once per table: the second build of a table's statement is the first one.
    queries = database.statements["orders"]
    key = ("alone", "one", False, False)
    assert queries.once(key, lambda: DriverStatement(queries.insert_one())) is queries.once(
        key, lambda: DriverStatement(queries.insert_one())
    )


def test_a_queue_table_dropped_and_created_again_elsewhere_keeps_enqueueing(
    database: Database, postgres_url: str
) -> None:
    database.apply(QueueResource.from_name("orders"))
    orders = database.queue("orders")
    for n in range(3):
        orders.enqueue({"before": n})
    assert _prepared_inserts(database)  # prepared on this connection, before the drop
    with connect(postgres_url) as other:  # another pool: its DDL is not seen by psycopg here
        assert other.delete_queue("orders", drop_table=True)
        other.apply(QueueResource.from_name("orders"))

    enqueued = orders.enqueue({"after": 1}, message_id="a")
    assert (enqueued.outcome, enqueued.version, enqueued.status) == ("inserted", 1, "Pending")
    assert _bodies(postgres_url, "orders") == [{"after": 1}]


def test_a_migration_of_the_queue_table_elsewhere_keeps_enqueueing(
    database: Database, postgres_url: str
) -> None:
    database.apply(QueueResource.from_name("orders"))
    orders = database.queue("orders")
    for n in range(3):
        orders.enqueue({"before": n}, message_id=f"m{n}")
    with psycopg.connect(postgres_url, autocommit=True) as other:
        other.execute("ALTER TABLE orders ADD COLUMN added_later integer")
        other.execute("ALTER TABLE orders ALTER COLUMN priority TYPE integer")

    assert orders.enqueue({"after": 0}, message_id="m0").outcome == "updated"
    assert orders.enqueue({"after": 3}, message_id="m3").outcome == "inserted"
    assert _bodies(postgres_url, "orders") == [
        {"after": 0},
        {"before": 1},
        {"before": 2},
        {"after": 3},
    ]


def test_a_migration_that_changes_a_returned_type_keeps_enqueueing(
    database: Database, postgres_url: str
) -> None:
    """PostgreSQL refuses a prepared plan whose result type changed: deallocated, run again."""
    database.apply(QueueResource.from_name("orders"))
    orders = database.queue("orders")
    for n in range(3):
        orders.enqueue({"before": n}, message_id=f"m{n}")
    with psycopg.connect(postgres_url, autocommit=True) as other:
        other.execute("ALTER TABLE orders ALTER COLUMN version TYPE bigint")

    enqueued = orders.enqueue({"after": 0}, message_id="m0")
    assert (enqueued.outcome, enqueued.version) == ("updated", 2)
    assert _bodies(postgres_url, "orders") == [{"after": 0}, {"before": 1}, {"before": 2}]
