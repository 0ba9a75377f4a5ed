"""The outbox pattern with a plain psycopg 3 connection: the message commits with the caller's
transaction, the NOTIFY that wakes workers arrives only with that commit (and never after a
rollback), and a connection to another database of the same server is refused.

PostgreSQL only: these are psycopg's connections and PostgreSQL's LISTEN/NOTIFY.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import psycopg
import pytest

from tablequeue import Database, connect
from tablequeue.dialects import notify_channel
from tablequeue.errors import InvalidInput
from tablequeue.spec import QueueResource
from tests.support.postgres_server import PostgresServer

_numbers = itertools.count()


@pytest.fixture
def database(postgres_url: str) -> Iterator[Database]:
    with connect(postgres_url) as db:
        db.apply(QueueResource.from_name("orders"))
        yield db


def _app(url: str, **options: object) -> psycopg.Connection:
    connection = psycopg.connect(url, **options)  # type: ignore[arg-type]
    connection.execute("CREATE TABLE IF NOT EXISTS app_orders (id int PRIMARY KEY)")
    connection.commit()
    return connection


def _notifying_pids(listener: psycopg.Connection, until_pid: int) -> list[int]:
    """The backend pids of the notifications received, up to one sent by `until_pid`."""
    pids: list[int] = []
    for notification in listener.notifies(timeout=60):
        pids.append(notification.pid)
        if notification.pid == until_pid:
            break
    return pids


def test_a_psycopg_transaction_commits_or_rolls_back_the_message(
    database: Database, postgres_url: str
) -> None:
    queue = database.queue("orders")
    with _app(postgres_url) as app:
        app.execute("INSERT INTO app_orders VALUES (1)")
        queue.enqueue({"OrderId": 1}, connection=app)
        app.rollback()
        with app.transaction():
            app.execute("INSERT INTO app_orders VALUES (2)")
            result = queue.enqueue({"OrderId": 2}, connection=app)
        assert app.execute("SELECT array_agg(id) FROM app_orders").fetchone() == ([2],)
    [message] = queue.messages()
    assert message.id == result.id and message.message == {"OrderId": 2}


def test_psycopg_autocommit_is_refused_outside_a_transaction_block(
    database: Database, postgres_url: str
) -> None:
    queue = database.queue("orders")
    with _app(postgres_url, autocommit=True) as app:
        with pytest.raises(InvalidInput, match="autocommit"):
            queue.enqueue({"n": 1}, connection=app)
        with app.transaction():  # BEGIN is sent: the message belongs to this block
            queue.enqueue({"n": 2}, connection=app)
    assert [m.message for m in queue.messages()] == [{"n": 2}]


def test_workers_are_notified_only_by_the_commit(database: Database, postgres_url: str) -> None:
    queue = database.queue("orders")
    channel = notify_channel(queue.table.name)
    with (
        psycopg.connect(postgres_url, autocommit=True) as listener,
        _app(postgres_url) as app,
    ):
        listener.execute(f'LISTEN "{channel}"')
        caller = app.info.backend_pid
        # Rolled back: nothing is ever sent for it. The next notifications are a committed
        # enqueue of the queue's own engine, then the caller's committed one, in that order.
        queue.enqueue({"n": "rolled back"}, connection=app)
        app.rollback()
        queue.enqueue({"n": "by the queue's engine"})
        queue.enqueue({"n": "committed"}, connection=app)
        uncommitted_then = [m.message["n"] for m in queue.messages()]
        app.commit()
        pids = _notifying_pids(listener, caller)
    assert uncommitted_then == ["by the queue's engine"]
    assert len(pids) == 2 and pids[0] != caller and pids[1] == caller


def test_another_database_on_the_same_server_is_refused(
    database: Database, postgres: PostgresServer
) -> None:
    queue = database.queue("orders")
    elsewhere = postgres.create_database(f"outbox_elsewhere_{next(_numbers)}")
    with _app(elsewhere) as app:
        with pytest.raises(InvalidInput, match="another database"):
            queue.enqueue({"n": 1}, connection=app)
        app.rollback()
    assert queue.count() == 0
