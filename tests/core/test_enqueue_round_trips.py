"""PostgreSQL: an enqueue outside the caller's transaction is one round trip (one autocommit
statement, no BEGIN or COMMIT; its first use on a connection also prepares it), counted from
libpq's protocol trace of the pool's only connection. A batch that repeats a messageId still
runs its statements in one transaction, and so does an enqueue behind a transaction pooler
with a statement timeout (set per transaction).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa

from tablequeue import Database, NewMessage, connect
from tablequeue.spec import QueueResource
from tablequeue.storage.timeouts import DatabaseTimeouts


@pytest.fixture
def database(postgres_url: str) -> Iterator[Database]:
    with connect(postgres_url, poolclass=sa.pool.StaticPool) as db:  # one connection to trace
        yield db


def _round_trips(trace: str) -> list[list[str]]:
    """The frontend messages libpq sent, grouped by round trip (a simple Query, or the
    extended protocol's messages up to their Sync); the pool's liveness ping left out."""
    trips: list[list[str]] = []
    current: list[str] = []
    for line in trace.splitlines():
        fields = line.split("\t")
        if len(fields) < 3 or fields[0] != "F":
            continue
        current.append("\t".join(fields[2:]))
        if fields[2] in ("Query", "Sync"):
            trips.append(current)
            current = []
    return [trip for trip in trips if not any("SELECT 1" in message for message in trip)]


def _inserts(message: str) -> bool:
    return "INSERT INTO orders" in message or message.startswith('Bind\t "" "_pg3_')


Traced = Callable[[Database, Callable[[], object]], list[list[str]]]


@pytest.fixture
def traced(tmp_path: Path) -> Traced:
    def run(database: Database, work: Callable[[], object]) -> list[list[str]]:
        pooled = database.engine.raw_connection()
        pgconn = pooled.dbapi_connection.pgconn  # type: ignore[union-attr]
        pooled.close()
        path = tmp_path / "trace"
        with open(path, "w") as file:
            pgconn.trace(os.dup(file.fileno()))  # libpq closes its own copy
        pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            work()
        finally:
            pgconn.untrace()
        return _round_trips(path.read_text())

    return run


def test_a_single_enqueue_is_one_statement_without_begin_or_commit(
    database: Database, traced: Traced
) -> None:
    database.apply(QueueResource.from_name("orders", idempotent=True))
    queue = database.queue("orders")
    # The first use of a statement on a connection prepares it: one more round trip, once.
    queue.enqueue({"n": 0})
    queue.enqueue({"n": 0}, message_id="warm", after=30)
    for work in (
        lambda: queue.enqueue({"n": 1}),
        lambda: queue.enqueue({"n": 2}, message_id="a", after=30),
        lambda: queue.enqueue({"n": 2}, message_id="a"),  # discarded: same body
        lambda: queue.enqueue_many([NewMessage(message={"n": n}) for n in range(50)]),
    ):
        trips = traced(database, work)
        assert len(trips) == 1, trips
        # The INSERT's text, or (once prepared) a Bind of psycopg's prepared statement.
        assert any(_inserts(message) for message in trips[0]), trips
    assert queue.count() == 54
    assert queue.get_by_tracking_id(queue.enqueue({"n": 3}).tracking_id or "").version == 1


def test_a_keep_enqueue_is_one_statement_and_one_read_of_a_kept_row(
    database: Database, traced: Traced
) -> None:
    database.apply(QueueResource.from_name("orders", dedupe={"mode": "keep"}))
    queue = database.queue("orders")
    queue.enqueue({"n": 0}, message_id="warm")  # prepares the statements
    queue.enqueue({"n": 0}, message_id="warm")
    new = traced(database, lambda: queue.enqueue({"n": 1}, message_id="a"))
    assert len(new) == 1 and any(_inserts(message) for message in new[0]), new
    kept = traced(database, lambda: queue.enqueue({"n": 2}, message_id="a"))
    texts = [" ".join(trip) for trip in kept]
    assert len(kept) == 2 and not any("BEGIN" in text for text in texts), texts
    assert queue.enqueue({"n": 3}, message_id="a").outcome == "kept"
    assert [m.message for m in queue.messages(message_id="a")] == [{"n": 1}]


def test_a_batch_repeating_a_message_id_is_one_transaction(
    database: Database, traced: Traced
) -> None:
    database.apply(QueueResource.from_name("orders"))
    queue = database.queue("orders")
    batch = [NewMessage(message={"n": n}, message_id="same") for n in range(3)]
    trips = traced(database, lambda: queue.enqueue_many(batch))
    texts = [" ".join(trip) for trip in trips]
    assert "BEGIN" in texts[0] and "COMMIT" in texts[-1], texts
    assert sum("INSERT INTO orders" in text for text in texts) == 3, texts
    assert [m.version for m in queue.messages()] == [3]


def test_behind_a_transaction_pooler_the_statement_timeout_keeps_its_transaction(
    database: Database, postgres_url: str, traced: Traced
) -> None:
    database.apply(QueueResource.from_name("orders"))
    pooled_url = postgres_url + "?pooler=transaction"
    timeouts = DatabaseTimeouts(statement_seconds=5.0)
    with connect(pooled_url, timeouts=timeouts, poolclass=sa.pool.StaticPool) as behind:
        queue = behind.queue("orders")
        texts = [" ".join(trip) for trip in traced(behind, lambda: queue.enqueue({"n": 1}))]
        assert "BEGIN" in texts[0] and "COMMIT" in texts[-1], texts
        assert any("SET LOCAL statement_timeout = 5000" in text for text in texts), texts
    no_timeout = DatabaseTimeouts(statement_seconds=None)
    with connect(pooled_url, timeouts=no_timeout, poolclass=sa.pool.StaticPool) as behind:
        queue = behind.queue("orders")
        assert len(traced(behind, lambda: queue.enqueue({"n": 2}))) == 1
    assert database.queue("orders").count() == 2
