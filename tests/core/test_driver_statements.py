"""PostgreSQL: the single enqueue, the lease and the outcomes run on psycopg directly
(`tablequeue/dialects/driver.py`), each statement compiled once per queue table and prepared on
first use. On one pooled
connection (StaticPool), statements of several tables live side by side, and a queue table
dropped and created again, or altered by a migration, from another connection keeps working
(PostgreSQL re-plans a prepared statement after DDL on its tables)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC

import psycopg
import pytest
import sqlalchemy as sa

from tablequeue import Completion, Database, NewMessage, Queue, connect
from tablequeue.dialects.driver import DriverStatement
from tablequeue.errors import DatabaseUnavailable
from tablequeue.spec import QueueResource
from tests.support.ports import free_port
from tests.support.statements import StatementsRun


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
    key = ("autocommit", "one", False, False)
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


# --- the worker's cycle: lease and outcomes on psycopg, inside SQLAlchemy's transaction -----


def _enqueued(database: Database, n: int) -> Queue:
    database.apply(QueueResource.from_name("orders"))
    orders = database.queue("orders")
    orders.enqueue_many([NewMessage(message={"n": i}) for i in range(n)])
    return orders


def test_leased_times_are_utc_whatever_the_sessions_time_zone(postgres_url: str) -> None:
    kolkata = f"{postgres_url}?options=-c%20TimeZone%3DAsia/Kolkata"  # no option of ours then
    with connect(kolkata) as database:
        orders = _enqueued(database, 2)
        with database.transaction() as connection:
            shown = connection.exec_driver_sql("SHOW TimeZone").scalar_one()
        assert shown == "Asia/Kolkata"
        leased = orders.lease("w1", 2).messages
    with connect(postgres_url) as database:  # the session in UTC: psycopg's times as they are
        again = database.queue("orders").get(leased[0].id)
    for message in leased:
        for moment in (message.created_at, message.lease_expires_at, message.started_at):
            assert moment is not None and moment.tzinfo is UTC
    assert again.created_at == leased[0].created_at and again.created_at.tzinfo is UTC


def test_a_migration_that_changes_a_leased_type_costs_one_cycle(
    database: Database, postgres_url: str
) -> None:
    """The lease is prepared on first use; a type it returns changed elsewhere makes PostgreSQL
    refuse the plan inside the transaction. Its rollback makes psycopg deallocate every
    statement, so the next cycle prepares again: nothing settled is lost meanwhile."""
    orders = _enqueued(database, 4)
    first = orders.lease("w1", 1).messages
    with psycopg.connect(postgres_url, autocommit=True) as other:
        other.execute("ALTER TABLE orders ALTER COLUMN attempts TYPE bigint")
    try:
        settled, batch = orders.settle_and_lease("w1", [Completion(first[0])], 1)
    except sa.exc.NotSupportedError:  # the stale plan: the whole cycle rolled back
        settled, batch = orders.settle_and_lease("w1", [Completion(first[0])], 1)
    assert settled.deleted == 1 and len(batch.messages) == 1
    assert orders.count() == 3


def test_a_connection_lost_in_the_cycle_is_discarded_and_the_next_one_works(
    database: Database, postgres_url: str
) -> None:
    orders = _enqueued(database, 2)
    first = orders.lease("w1", 1).messages
    with database.transaction() as connection:
        backend = connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    with psycopg.connect(postgres_url, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [backend])
    with pytest.raises(DatabaseUnavailable, match="lost connection"):
        orders.settle_and_lease("w1", [Completion(first[0])], 1)
    settled, batch = orders.settle_and_lease("w1", [Completion(first[0])], 1)
    assert settled.deleted == 1 and len(batch.messages) == 1


def test_a_cycle_of_completions_is_two_statements_of_their_own(database: Database) -> None:
    orders = _enqueued(database, 4)
    first = orders.lease("w1", 2).messages
    with StatementsRun(database) as seen:
        settled, batch = orders.settle_and_lease("w1", [Completion(m) for m in first], 2)
    assert settled.deleted == 2 and len(batch.messages) == 2
    assert [text.split()[0] for text in seen] == ["update", "with"], seen  # lease, then outcomes


def test_an_outcome_that_breaks_the_cycle_gives_back_what_its_lease_took(
    database: Database,
) -> None:
    """The lease runs first: when the outcomes fail for a reason of their own (a result that is
    not JSON), the messages it took are Pending again, as a transaction's rollback leaves them."""
    orders = _enqueued(database, 3)
    first = orders.lease("w1", 1).messages
    with pytest.raises(TypeError):
        orders.settle_and_lease("w1", [Completion(first[0], result=object())], 2)
    assert orders.stats().counts == {"Leased": 1, "Pending": 2}
    assert all(m.attempts == 0 for m in orders.messages(status="Pending"))


def test_statements_in_autocommit_on_a_server_that_refuses_raise_database_unavailable() -> None:
    """The pool's own connection errors are the driver's: `autocommit` (an enqueue, a worker's
    cycle) raises them as `transaction()` does, so a worker backs off and recovers."""
    url = f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/none"
    database = connect(url)
    with pytest.raises(DatabaseUnavailable, match="cannot connect"), database.autocommit():
        pass
    database.close()
