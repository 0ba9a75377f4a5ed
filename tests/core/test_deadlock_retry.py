"""A transaction the database rolls back as a deadlock's victim runs again (`in_transaction`,
which leases and outcomes use): under eight processes draining one queue, InnoDB chose a
lease's UPDATE as a victim and the lease failed (CI, `test_eight_processes_...[mariadb]`).

A real deadlock, made certain: the other transaction locks row B (and, on MariaDB, 20 more, so
that InnoDB, which rolls back the lighter one, chooses ours), ours locks row A then waits for
B, the other then waits for A. On PostgreSQL the waiter whose `deadlock_timeout` passes first
is rolled back: the other's is 30 s, ours the default 1 s."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from tablequeue import Database, connect
from tablequeue.spec import QueueResource

pytestmark = pytest.mark.slow


@pytest.fixture(params=["postgres_url", "mariadb_url"])
def database(request: pytest.FixtureRequest) -> Iterator[Database]:
    with connect(request.getfixturevalue(request.param)) as db:
        db.apply(QueueResource.from_name("orders"))
        db.queue("orders").enqueue_many([{"n": n} for n in range(22)])
        yield db


def test_a_deadlock_victim_runs_again_and_its_work_is_done_once(database: Database) -> None:
    table = database.queue("orders").table
    a, b, *heavy = sorted(m.id for m in database.queue("orders").messages(limit=100))

    def touch(connection: Connection, *ids: int) -> None:
        connection.execute(sa.update(table).where(table.c.id.in_(ids)).values(priority=7))

    ours_waits = threading.Event()
    other_done = threading.Event()
    errors: list[BaseException] = []

    def other() -> None:
        try:
            with database.transaction() as connection:
                if database.dialect.name == "postgresql":
                    connection.exec_driver_sql("SET LOCAL deadlock_timeout = '30s'")
                touch(connection, b, *heavy)
                holding.set()
                ours_waits.wait(timeout=30)
                touch(connection, a)  # the cycle: ours holds A and waits for B
        except BaseException as error:
            errors.append(error)
        finally:
            other_done.set()

    holding = threading.Event()
    runs = 0

    def ours(connection: Connection) -> int:
        nonlocal runs
        runs += 1
        touch(connection, a)
        if runs == 1:
            assert holding.wait(timeout=30)
            ours_waits.set()
            touch(connection, b)  # waits for the other: the deadlock
        return runs

    worker = threading.Thread(target=other)
    worker.start()
    assert database.in_transaction(ours) == 2  # the first was the victim, the second committed
    worker.join(timeout=60)
    assert other_done.is_set() and errors == []
    assert {m.priority for m in database.queue("orders").messages(limit=100)} == {7}
