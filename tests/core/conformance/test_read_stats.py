"""Reading: pages, filters, counts and stats.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from tablequeue import Database, Failure, NewMessage
from tablequeue.dialects import Capabilities

from .helpers import MakeQueue


def test_messages_filter_and_page(make_queue: MakeQueue) -> None:
    queue = make_queue()
    queue.enqueue_many([NewMessage(message={"n": n, "even": n % 2 == 0}) for n in range(25)])
    queue.enqueue({"n": 99}, status="OnHold", message_id="held")
    first = queue.messages(limit=10)
    second = queue.messages(limit=10, after_id=first[-1].id)
    assert [m.message["n"] for m in first + second] == list(range(20))
    evens = queue.messages(where="even == true and n >= 10", limit=100)
    assert [m.message["n"] for m in evens] == [10, 12, 14, 16, 18, 20, 22, 24]
    assert [m.message_id for m in queue.messages(status="OnHold")] == ["held"]
    assert [m.message["n"] for m in queue.messages(limit=2, order="desc")] == [99, 24]
    assert queue.count(status="Pending") == 25


def test_stats_counts_backlog_oldest_and_health(make_queue: MakeQueue) -> None:
    queue = make_queue(health={"when_errors": "Degraded", "max_oldest_pending_seconds": 3600})
    stats = queue.stats()
    assert (stats.counts, stats.backlog, stats.health) == ({}, 0, "Healthy")
    queue.enqueue_many([NewMessage(message={"n": n}) for n in range(5)])
    queue.enqueue({"n": "later"}, after=3600)
    queue.enqueue({"n": "held"}, status="OnHold")
    [m] = queue.lease("w1", 1).messages
    queue.fail("w1", [Failure(m, "boom")])
    queue.lease("w1", 1)
    stats = queue.stats()
    assert stats.counts == {"Pending": 3, "Sleeping": 1, "OnHold": 1, "Error": 1, "Leased": 1}
    assert stats.backlog == 3 and stats.leased == 1
    assert 0 <= stats.oldest_pending_seconds < 60
    assert stats.health == "Degraded" and stats.health_reasons == ["1 message(s) in Error"]


def test_stats_estimate_only_huge_finished_statuses(
    database: Database, make_queue: MakeQueue, capabilities: Capabilities
) -> None:
    """Counting ten million Processed rows would take seconds: past 100,000 rows such a
    status is an estimate from the table statistics (PostgreSQL); work statuses stay exact."""
    queue = make_queue(keep_processed_for="forever")
    queue.enqueue_many([NewMessage(message={"n": n}) for n in range(30)])
    queue.set_status("OnHold", ids=[m.id for m in queue.messages(limit=5)])
    with database.engine.begin() as connection:  # 150,000 Processed rows, fast
        table = queue.table
        rows = connection.execute(sa.select(table).limit(1)).mappings().one()
        template = {k: v for k, v in rows.items() if k not in ("id", "tracking_id")}
        batch = [template | {"status": "Processed"} for _ in range(150_000)]
        for start in range(0, len(batch), 10_000):
            chunk = [row | {"tracking_id": uuid.uuid4()} for row in batch[start : start + 10_000]]
            connection.execute(table.insert(), chunk)
        if capabilities.estimates_counts:  # fresh table statistics, as the engine keeps them
            analyze = "ANALYZE TABLE" if connection.dialect.name == "mariadb" else "ANALYZE"
            connection.exec_driver_sql(f"{analyze} orders")
    stats = queue.stats()
    assert stats.counts["Pending"] == 25 and stats.counts["OnHold"] == 5
    assert stats.backlog == 25
    if capabilities.estimates_counts:
        assert stats.approximate == ["Processed"]
        assert 100_000 < stats.counts["Processed"] < 200_000
    else:
        assert stats.approximate == [] and stats.counts["Processed"] == 150_000
