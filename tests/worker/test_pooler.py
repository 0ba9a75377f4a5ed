"""Behind PgBouncer in transaction pooling mode (`?pooler=transaction`): real worker processes
drain a queue through a throwaway PgBouncer with a pool smaller than their connections; the
statement timeout is set per transaction and cancels through the pooler; bad values are refused.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tablequeue import connect
from tablequeue.dialects import notify_channel
from tablequeue.errors import DatabaseUnavailable, InvalidInput
from tablequeue.spec import QueueResource
from tablequeue.storage.timeouts import DatabaseTimeouts
from tests.support.pgbouncer_server import pgbouncer
from tests.support.postgres_server import PostgresServer
from tests.support.waiting import wait_until

from .helpers import FAST_POLL, SYNC, StartWorker, enqueue, events, run_failing_worker

_numbers = itertools.count()
POLLING = "behind a transaction pooler: no LISTEN, the worker polls"
NO_VACUUM = "behind a transaction pooler: no vacuum checks, autovacuum does it"


@pytest.fixture
def through_pooler(postgres: PostgresServer) -> Iterator[tuple[str, str]]:
    """(direct URL, URL through PgBouncer in transaction mode with 3 server connections)."""
    name = f"pooled_{next(_numbers)}"
    direct = postgres.create_database(name)
    with pgbouncer(postgres.port, name, pool_size=3) as url:
        yield direct, url


def test_two_workers_drain_through_the_pooler_exactly_once(
    through_pooler: tuple[str, str], start_worker: StartWorker, records: Path
) -> None:
    direct, url = through_pooler
    pooled = url + "?pooler=transaction"
    with connect(direct) as db:  # apply over the direct URL, as docs/guides/pgbouncer.md says
        db.apply(QueueResource.from_name("orders", keep_processed_for="1h"))
    workers = [
        start_worker(
            "orders",
            pooled,
            SYNC,
            "--concurrency",
            "4",
            "--batch-size",
            "10",
            "--vacuum-interval",
            "1",
            *FAST_POLL,
        )
        for _ in range(2)
    ]
    for worker in workers:
        worker.wait_ready(60)
    total = 600
    with connect(pooled) as db:  # enqueued through the pooler too (with its NOTIFY)
        queue = db.queue("orders")
        ids = set(enqueue(queue, [{"n": n} for n in range(total)]))
        wait_until(lambda: queue.count(status="Processed") == total, timeout=180, interval=0.25)
        assert queue.stats().counts == {"Processed": total}

    done = events(records, "done")
    assert not [i for i, n in Counter(done).items() if n > 1], "handled twice"
    assert set(done) == ids
    for worker in workers:
        said = worker.logs

        def logged(said: Callable[[], list[dict[str, Any]]] = said) -> bool:
            return any(x["message"] == NO_VACUUM for x in said())

        wait_until(logged, 60)
        lines = worker.logs()
        assert [x["message"] for x in lines].count(POLLING) == 1
        assert [x["message"] for x in lines].count(NO_VACUUM) == 1
        assert [x for x in lines if x["level"] in ("WARNING", "ERROR", "CRITICAL")] == []
        assert worker.get("/livez")[0] == 200  # every task of the worker still runs
    with psycopg.connect(direct) as conn:  # no session lock left on a pooled server connection
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database ="
            " (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchone()
        assert row == (0,)


def test_statement_timeout_is_set_per_transaction_and_cancels_through_the_pooler(
    through_pooler: tuple[str, str],
) -> None:
    _, url = through_pooler
    with connect(url) as db, pytest.raises(DatabaseUnavailable) as refused:
        db.ping()  # without the setting: PgBouncer refuses the statement_timeout startup option
    assert "unsupported startup parameter: options" in str(refused.value)

    timeouts = DatabaseTimeouts(statement_seconds=1.0)
    with connect(url + "?pooler=transaction", timeouts=timeouts) as db:
        with db.transaction() as connection:
            assert connection.exec_driver_sql("SHOW statement_timeout").scalar() == "1s"
            driver_connection = connection.connection.dbapi_connection
            assert driver_connection is not None
            assert driver_connection.prepare_threshold is None
        with db.reading() as connection:
            assert connection.exec_driver_sql("SHOW statement_timeout").scalar() == "1s"
        cancelled = pytest.raises(DatabaseUnavailable, match="cancelled a statement")
        with cancelled, db.transaction() as connection:
            connection.exec_driver_sql("SELECT pg_sleep(60)")
        with db.engine.connect() as connection:  # SET LOCAL ended with its transaction
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
            assert connection.exec_driver_sql("SHOW statement_timeout").scalar() == "0"

    with (
        connect(  # no timeout: nothing set (the role's setting applies)
            url + "?pooler=transaction", timeouts=DatabaseTimeouts(statement_seconds=None)
        ) as db,
        db.transaction() as connection,
    ):
        assert connection.exec_driver_sql("SHOW statement_timeout").scalar() == "0"


def test_index_builds_are_refused_through_the_pooler(through_pooler: tuple[str, str]) -> None:
    _, url = through_pooler
    with connect(url + "?pooler=transaction") as db:
        assert db.apply(QueueResource.from_name("plain")) == "created"
        indexed = QueueResource.from_name("indexed", indexes=[{"path": "customer"}])
        with pytest.raises(InvalidInput, match="needs a direct connection"):
            db.apply(indexed)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://u@127.0.0.1/db?pooler=session", "unsupported pooler='session'"),
        ("postgresql://u@127.0.0.1/db?pooler=Transaction", "unsupported pooler='Transaction'"),
        (
            "postgresql://u@127.0.0.1/db?pooler=transaction&pooler=session",
            "unsupported pooler='transaction&pooler=session'",
        ),
        ("sqlite:///queue.db?pooler=transaction", "sqlite URLs take no pooler"),
    ],
)
def test_the_pooler_setting_refuses_garbage(url: str, expected: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        connect(url)
    assert expected in str(refused.value)


def test_the_worker_refuses_an_unknown_pooler_in_one_line() -> None:
    bad = "postgresql://u@127.0.0.1:9/db?pooler=statement"
    line = run_failing_worker("--handler", SYNC, "--db", bad)
    assert line.startswith("error: unsupported pooler='statement' in the database URL")


def test_a_direct_listen_url_brings_back_listen(
    through_pooler: tuple[str, str], start_worker: StartWorker, records: Path
) -> None:
    direct, url = through_pooler
    with connect(direct) as db:
        db.apply(QueueResource.from_name("orders"))
        channel = notify_channel(db.queue("orders").table.name)
    worker = start_worker(
        "orders", url + "?pooler=transaction", SYNC, "--listen-db", direct, *FAST_POLL
    )
    worker.wait_ready(60)
    listening = (
        "SELECT count(*) FROM pg_stat_activity WHERE query = %s AND datname = current_database()"
    )
    # autocommit: a transaction would see one snapshot of pg_stat_activity for ever
    with psycopg.connect(direct, autocommit=True) as conn:  # only a direct URL can LISTEN
        wait_until(lambda: conn.execute(listening, [f'LISTEN "{channel}"']).fetchone() == (1,), 60)
    with connect(url + "?pooler=transaction") as db:
        [message] = enqueue(db.queue("orders"), [{"n": 1}])
    wait_until(lambda: message in events(records, "done"), 60)
    assert [x for x in worker.logs() if x["message"] == POLLING] == []


@pytest.mark.parametrize(
    ("listen_db", "expected"),
    [
        ("sqlite:///queue.db", "is sqlite, the database postgresql"),
        ("postgresql://u@127.0.0.1:9/db?pooler=transaction", "goes through a transaction pooler"),
        ("postgresql://u@127.0.0.1:9/db?pooler=session", "unsupported pooler='session'"),
    ],
)
def test_the_worker_refuses_a_listen_url_that_cannot_listen(listen_db: str, expected: str) -> None:
    line = run_failing_worker(
        "--handler", SYNC, "--db", "postgresql://u@127.0.0.1:9/db", "--listen-db", listen_db
    )
    assert line.startswith("error: ") and expected in line
