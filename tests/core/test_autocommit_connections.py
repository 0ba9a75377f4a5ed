"""PostgreSQL: the connections of statements in autocommit (a single enqueue, a worker's cycle)
stay checked out between uses, in autocommit mode (`Storage.autocommit`): never handed to a
transaction, tested before use when they sat idle, closed with the database."""

from __future__ import annotations

import os
import threading
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from tablequeue import Database, Queue, connect
from tablequeue.errors import DatabaseUnavailable
from tablequeue.spec import QueueResource
from tablequeue.storage import engine as storage_engine
from tests.support.waiting import wait_until


def _backend(dbapi_connection: Any) -> int:
    return int(dbapi_connection.info.backend_pid)


def _driver_connection(connection: sa.Connection) -> Any:
    return connection.connection.driver_connection


def test_a_kept_connection_serves_the_next_statements_and_never_a_transaction(
    postgres_url: str,
) -> None:
    with connect(postgres_url) as db:
        with db.autocommit() as first:
            kept = _backend(first)
        with db.autocommit() as again:
            assert _backend(again) == kept and again.autocommit
        with db.transaction() as connection:
            in_transaction = _driver_connection(connection)
            assert not in_transaction.autocommit and _backend(in_transaction) != kept
        with db.autocommit() as outer, db.autocommit() as inner:  # two at once: two
            assert _backend(outer) != _backend(inner)


def _orders_with_the_kept_connection_killed(db: Database, postgres_url: str) -> tuple[Queue, int]:
    """A queue with one message, enqueued on the connection now kept, whose backend is gone;
    its process id."""
    db.apply(QueueResource.from_name("orders"))
    orders = db.queue("orders")
    orders.enqueue({"n": 1})
    with db.autocommit() as kept:
        killed = _backend(kept)
    with psycopg.connect(postgres_url, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [killed])
    _wait_until_gone(postgres_url, killed)
    return orders, killed


def _wait_until_gone(postgres_url: str, backend: int) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as other:
        query = "SELECT count(*) FROM pg_stat_activity WHERE pid = %s"
        wait_until(lambda: other.execute(query, [backend]).fetchone() == (0,))


def test_a_kept_connection_killed_while_idle_is_replaced_before_use(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept connection sat idle (here: any time counts as idle) and its backend is gone, as
    after a database restart: the enqueue tests it, takes another, and succeeds."""
    monkeypatch.setattr(storage_engine, "PING_AFTER_IDLE_SECONDS", 0.0)
    with connect(postgres_url) as db:
        orders, _ = _orders_with_the_kept_connection_killed(db, postgres_url)
        orders.enqueue({"n": 2})
        assert orders.count() == 2


def test_a_kept_connection_killed_in_use_is_discarded_and_the_next_statement_works(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Used before it counts as idle, the lost connection shows, as the pool's own do: one
    DatabaseUnavailable, the connection discarded, the next enqueue on a new one."""
    monkeypatch.setattr(storage_engine, "PING_AFTER_IDLE_SECONDS", 3600.0)
    with connect(postgres_url) as db:
        orders, killed = _orders_with_the_kept_connection_killed(db, postgres_url)
        with pytest.raises(DatabaseUnavailable, match="lost connection"):
            orders.enqueue({"n": 2})
        orders.enqueue({"n": 2})
        assert orders.count() == 2
        with db.autocommit() as fresh:
            assert _backend(fresh) != killed


def test_closing_the_database_closes_its_kept_connections(postgres_url: str) -> None:
    db = connect(postgres_url)
    with db.autocommit() as kept:
        backend = _backend(kept)
    db.close()
    _wait_until_gone(postgres_url, backend)


def test_a_static_pool_keeps_nothing_its_transaction_would_share(postgres_url: str) -> None:
    """StaticPool hands its one connection to everyone: kept in autocommit, a transaction on
    it would commit each statement. Nothing is kept, and a rollback still rolls back."""
    with connect(postgres_url, poolclass=sa.pool.StaticPool) as db:
        db.apply(QueueResource.from_name("orders"))
        orders = db.queue("orders")
        orders.enqueue({"n": 1})
        with pytest.raises(RuntimeError), db.transaction() as connection:
            assert not _driver_connection(connection).autocommit
            orders.enqueue({"n": 2}, connection=connection)
            raise RuntimeError("roll back")
        assert orders.count() == 1


def test_threads_enqueueing_at_once_each_get_their_own_connection(postgres_url: str) -> None:
    with connect(postgres_url) as db:
        db.apply(QueueResource.from_name("orders"))
        orders = db.queue("orders")
        errors: list[BaseException] = []

        def enqueue(k: int) -> None:
            try:
                for i in range(50):
                    orders.enqueue({"k": k, "i": i})
            except BaseException as error:  # reported below
                errors.append(error)

        threads = [threading.Thread(target=enqueue, args=(k,)) for k in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [] and orders.count() == 300
        with db.transaction() as connection:  # none of the kept ones is in a transaction
            assert not _driver_connection(connection).autocommit


def test_a_forked_child_neither_uses_nor_closes_the_parents_kept_connections(
    postgres_url: str,
) -> None:
    """A pre-forking server forks after the parent enqueued: the child (after SQLAlchemy's own
    advice, `dispose(close=False)`) enqueues on connections of its own and closes them; the
    parent's kept connection, on the socket both processes hold, still works."""
    with connect(postgres_url) as db:
        db.apply(QueueResource.from_name("orders"))
        orders = db.queue("orders")
        orders.enqueue({"n": 1})
        with db.autocommit() as kept:
            parents = _backend(kept)
        child = os.fork()
        if child == 0:  # pragma: no cover - the child's outcome is its exit code
            code = 1
            try:
                db.engine.dispose(close=False)
                orders.enqueue({"n": 2})
                with db.autocommit() as own:
                    code = 0 if _backend(own) != parents else 2
                db.close()
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        orders.enqueue({"n": 3})
        with db.autocommit() as kept:
            assert _backend(kept) == parents
        assert orders.count() == 3
