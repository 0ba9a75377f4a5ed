"""`started_at`: when the lease of a message's latest attempt began, by the database clock, kept
once the message finished; and the migration that adds it to a table of schema version 3.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from tablequeue import Completion, Database, Failure
from tablequeue.spec import QueueResource
from tablequeue.storage.schema import SCHEMA_VERSION, migrate
from tests.support.waiting import wait_until

from .helpers import MakeQueue


def _database_now(database: Database) -> datetime:
    with database.engine.connect() as connection:
        value = connection.execute(sa.select(database.dialect.now())).scalar_one()
    if isinstance(value, str):  # SQLite's clock is ISO text
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def test_a_lease_sets_started_at_and_a_kept_processed_message_keeps_it(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue(keep_processed_for="7d")
    done = queue.enqueue({"n": 1})
    assert queue.get(done.id or 0).started_at is None
    before = _database_now(database)
    [m] = queue.lease("w1", 5).messages
    after = _database_now(database)
    assert m.started_at is not None and before <= m.started_at <= after
    assert m.started_at == m.updated_at  # the lease's own now
    leased = queue.get(m.id)  # as stored (MariaDB over ODBC keeps whole seconds of it)
    assert leased.started_at is not None and leased.started_at == leased.updated_at
    assert queue.complete("w1", [Completion(m)]).processed == 1
    stored = queue.get(m.id)
    assert stored.status == "Processed" and stored.started_at == leased.started_at
    assert stored.processed_at is not None and stored.processed_at >= leased.started_at


def test_a_retried_message_gets_the_start_of_its_later_attempt(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue(
        keep_processed_for="7d",
        max_attempts=3,
        retry={"delay_seconds": 0, "backoff": "fixed", "jitter": 0},
    )
    queue.enqueue({"n": 1})
    [first] = queue.lease("w1", 5).messages
    assert first.started_at is not None
    first_stored = queue.get(first.id).started_at
    assert queue.fail("w1", [Failure(first, "boom")]).retrying == 1
    assert queue.get(first.id).started_at == first_stored  # the failed attempt's start
    started = first.started_at
    wait_until(lambda: _database_now(database) > started, timeout=10)
    [second] = wait_until(lambda: queue.lease("w1", 5).messages, timeout=10)
    assert second.attempts == 2 and second.started_at is not None
    assert second.started_at > first.started_at
    second_stored = queue.get(first.id).started_at
    assert second_stored is not None and second_stored >= (first_stored or second_stored)
    assert queue.complete("w1", [Completion(second)]).processed == 1
    assert queue.get(first.id).started_at == second_stored


def test_apply_adds_started_at_to_a_version_3_table_and_keeps_its_messages(
    database: Database,
) -> None:
    resource = QueueResource.from_name("old", keep_processed_for="7d")
    database.apply(resource)
    queue = database.queue("old")
    kept = queue.enqueue({"n": 1}, message_id="k1")
    with database.transaction() as connection:  # version 3's table, by hand
        connection.exec_driver_sql("ALTER TABLE old DROP COLUMN started_at")
        connection.execute(database.registry.update().values(schema_version=3))

    assert database.apply(resource) == "updated"
    [row] = database.queues()
    assert row["schema_version"] == SCHEMA_VERSION
    columns = {c["name"]: c for c in sa.inspect(database.engine).get_columns("old")}
    assert columns["started_at"]["nullable"]
    assert database.apply(resource) == "unchanged"
    queue = database.queue("old")
    with database.transaction() as connection:  # a second run adds nothing
        migrate(connection, queue.table, 3)
    assert queue.get(kept.id or 0).started_at is None
    [m] = queue.lease("w1", 5).messages
    assert m.id == kept.id and m.started_at is not None
    stored = queue.get(m.id).started_at
    assert queue.complete("w1", [Completion(m)]).processed == 1
    assert stored is not None and queue.get(m.id).started_at == stored
