"""Transactional enqueue (the outbox pattern): messages enqueued through the application's own
connection commit with its work and vanish with its rollback; nobody else sees them before.

Part of the conformance suite: every test runs on every engine (`db_url`). The application has
its own plain SQLAlchemy engine (tests/support/application.py), as a user would.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tablequeue import Database, NewMessage
from tablequeue.dialects import Capabilities
from tablequeue.errors import InvalidInput
from tests.support.application import ORDERS, application_engine, order_ids

from .helpers import MakeQueue, lease_all


class Rollback(Exception):
    """Raised inside the application's transaction to roll it back."""


@pytest.fixture
def app(database: Database) -> Iterator[sa.Engine]:
    engine = application_engine(database.url)
    yield engine
    engine.dispose()


def test_rollback_leaves_neither_the_row_nor_the_message(
    app: sa.Engine, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    with pytest.raises(Rollback), app.connect() as connection, connection.begin():
        connection.execute(ORDERS.insert().values(id=1, total=250))
        result = queue.enqueue({"OrderId": 1}, connection=connection, message_id="order-1")
        assert result.outcome == "inserted" and result.id is not None
        raise Rollback
    assert queue.count() == 0 and order_ids(app) == []
    assert queue.messages() == []


def test_commit_leaves_exactly_one_message_with_the_row(
    app: sa.Engine, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    with app.connect() as connection, connection.begin():
        connection.execute(ORDERS.insert().values(id=7, total=250))
        result = queue.enqueue({"OrderId": 7}, connection=connection, headers={"k": "v"})
    [message] = queue.messages()
    assert message.id == result.id and message.tracking_id == result.tracking_id
    assert message.message == {"OrderId": 7} and message.headers == {"k": "v"}
    assert message.status == "Pending" and order_ids(app) == [7]
    assert lease_all(queue) == [message.id]


def test_others_never_see_an_uncommitted_message(
    app: sa.Engine, database: Database, make_queue: MakeQueue, capabilities: Capabilities
) -> None:
    queue = make_queue()
    queue.enqueue({"n": "before"})
    [before] = lease_all(queue)
    leased_after_commit: list[int] = []
    with app.connect() as connection:
        with connection.begin():
            connection.execute(ORDERS.insert().values(id=1, total=1))
            mine = queue.enqueue({"n": "mine"}, connection=connection)
            # Another connection (the queue's own engine) reads and leases the committed state.
            with database.reading() as reader:
                ids = reader.execute(sa.select(queue.table.c.id)).scalars().all()
            assert ids == [before]
            if capabilities.one_writer:
                # The lease waits for this transaction to end; it gets the message afterwards.
                lease = threading.Thread(
                    target=lambda: leased_after_commit.extend(lease_all(queue))
                )
                lease.start()
            else:
                assert lease_all(queue) == []  # a worker skips nothing it cannot see
        if capabilities.one_writer:
            lease.join(timeout=60)
            assert not lease.is_alive()
        else:
            leased_after_commit = lease_all(queue)
    assert leased_after_commit == [mine.id]


def test_a_batch_commits_and_rolls_back_whole(app: sa.Engine, make_queue: MakeQueue) -> None:
    queue = make_queue()
    batch = [NewMessage(message={"n": n}, message_id=f"m-{n % 3}") for n in range(6)]
    with pytest.raises(Rollback), app.connect() as connection, connection.begin():
        queue.enqueue_many(batch, connection=connection)
        raise Rollback
    assert queue.count() == 0
    with app.connect() as connection, connection.begin():
        results = queue.enqueue_many(batch, connection=connection)
    assert [r.outcome for r in results] == ["inserted"] * 3 + ["updated"] * 3
    assert sorted(m.message["n"] for m in queue.messages()) == [3, 4, 5]


def test_commit_as_you_go_and_a_dbapi_connection(app: sa.Engine, make_queue: MakeQueue) -> None:
    """SQLAlchemy's commit-as-you-go style (no begin() before the enqueue), and the driver's
    own connection (psycopg, sqlite3, PyMySQL, pyodbc) committed or rolled back by the caller."""
    queue = make_queue()
    with app.connect() as connection:
        queue.enqueue({"n": 1}, connection=connection)
        assert connection.in_transaction()
        connection.rollback()
        queue.enqueue({"n": 2}, connection=connection)
        connection.commit()
    proxied = app.raw_connection()
    try:
        driver_connection = proxied.dbapi_connection
        assert driver_connection is not None
        queue.enqueue({"n": 3}, connection=driver_connection)
        driver_connection.rollback()
        queue.enqueue({"n": 4}, connection=driver_connection)
        driver_connection.commit()
    finally:
        proxied.close()
    assert sorted(m.message["n"] for m in queue.messages()) == [2, 4]


def test_a_connection_to_another_database_is_refused(make_queue: MakeQueue, tmp_path: Path) -> None:
    queue = make_queue()
    other = application_engine(f"sqlite:///{tmp_path / 'elsewhere.db'}")
    try:
        with other.connect() as connection, connection.begin():
            connection.execute(ORDERS.insert().values(id=1, total=1))
            with pytest.raises(InvalidInput, match=r"another database|is to a sqlite database"):
                queue.enqueue({"n": 1}, connection=connection)
            proxied = other.raw_connection()
            try:
                with pytest.raises(InvalidInput, match=r"another database|cannot enqueue through"):
                    queue.enqueue({"n": 1}, connection=proxied.dbapi_connection)
            finally:
                proxied.close()
    finally:
        other.dispose()
    assert queue.count() == 0


def test_an_autocommit_connection_is_refused(database: Database, make_queue: MakeQueue) -> None:
    queue = make_queue()
    engine = application_engine(database.url).execution_options(isolation_level="AUTOCOMMIT")
    try:
        with (
            engine.connect() as connection,
            connection.begin(),
            pytest.raises(InvalidInput, match="autocommit"),
        ):
            queue.enqueue({"n": 1}, connection=connection)
    finally:
        engine.dispose()
    assert queue.count() == 0


def test_something_else_is_refused(make_queue: MakeQueue) -> None:
    queue = make_queue()
    with pytest.raises(InvalidInput, match=r"cannot enqueue through a builtins\.str"):
        queue.enqueue({"n": 1}, connection="postgresql://elsewhere")
