"""Retention by real worker processes: keepProcessedFor, keepResultsFor and the other final
statuses' durations applied by one worker of a queue at a time, with deleted queues' results
and the audit trail, and counts in the metrics and the logs."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa

from tablequeue import Actor, Completion, Database, acting_as
from tests.support.audit_entries import backdate
from tests.support.waiting import wait_until

from .helpers import FAST_POLL, SYNC, MakeQueue, StartWorker, counter, enqueue


def _count(database: Database, table: sa.Table, queue: str) -> int:
    with database.transaction() as connection:
        statement = sa.select(sa.func.count()).where(table.c.queue == queue)
        return int(connection.execute(statement).scalar_one())


def test_two_workers_purge_what_retention_says_one_at_a_time(
    make_queue: MakeQueue,
    database: Database,
    db_url: str,
    start_worker: StartWorker,
    records: Path,
) -> None:
    queue = make_queue(
        "orders",
        keep_processed_for="2s",
        keep_results_for="4s",
        max_attempts=1,
    )
    good = enqueue(queue, [{"n": n} for n in range(30)])
    bad = enqueue(queue, [{"raise": "no"}] * 2)
    options = ("--purge-interval", "1", *FAST_POLL)
    workers = [start_worker("orders", db_url, SYNC, *options) for _ in range(2)]
    for worker in workers:
        worker.wait_ready()
    results = database.history.results
    # Every success is Processed, then purged after 2 s; every result (Error ones too) goes
    # after 4 s. The two failed rows stay (retention purges Processed ones) with their attempts.
    wait_until(lambda: queue.count() == len(bad), timeout=90)
    wait_until(lambda: _count(database, results, "orders") == 0, timeout=90)
    assert queue.count(status="Error") == len(bad)
    assert _count(database, database.history.attempts, "orders") == len(bad)
    assert database.find_job(str(queue.messages()[0].tracking_id)).source == "queue"

    def purged(what: str) -> list[float]:
        labels = {"queue": "orders", "what": what}
        return [counter(w, "tablequeue_worker_purged_total", **labels) for w in workers]

    wait_until(lambda: sum(purged("messages")) == len(good), timeout=30)
    wait_until(lambda: sum(purged("results")) == len(good) + len(bad), timeout=30)
    # The housekeeping lease: one worker purged everything, the other never did.
    purging = [
        w.name
        for w in workers
        if counter(w, "tablequeue_worker_purged_total", queue="orders", what="messages")
    ]
    assert len(purging) == 1
    assert queue.housekeeping_holder() == purging[0]
    logged = [line for w in workers for line in w.logs() if line.get("message") == "purged"]
    assert {line["owner"] for line in logged} == set(purging)
    assert sum(line["messages"] for line in logged) == len(good)


def test_a_worker_purges_failures_deleted_queues_and_the_audit_trail(
    make_queue: MakeQueue,
    database: Database,
    db_url: str,
    start_worker: StartWorker,
) -> None:
    queue = make_queue("orders", keep_error_for="1s", max_attempts=1)
    bad = enqueue(queue, [{"raise": "no"}] * 2)
    gone = make_queue("gone")
    enqueue(gone, [{"n": 1}, {"n": 2}])
    gone.complete("w1", [Completion(m) for m in gone.lease("w1", 2).messages])
    database.delete_queue("gone", drop_table=True)
    with acting_as(Actor("alice", "cli")):
        database.pause("orders")
        database.resume("orders")
    assert len(database.audit_entries()) == 2
    backdate(database, timedelta(days=2))  # older than the shortest retention, a day
    options = ("--purge-interval", "1", "--keep-audit-days", "1", *FAST_POLL)
    worker = start_worker("orders", db_url, SYNC, *options)
    worker.wait_ready()
    wait_until(lambda: queue.count() == 0, timeout=60)  # Error rows, a second after failing
    wait_until(lambda: _count(database, database.history.results, "gone") == 0, timeout=30)
    wait_until(lambda: database.audit_entries() == [], timeout=30)

    def purged(what: str) -> float:
        return counter(worker, "tablequeue_worker_purged_total", queue="orders", what=what)

    wait_until(lambda: purged("audit") == 2 and purged("messages") == len(bad), timeout=30)
    assert purged("leftovers") == 2  # gone's two results
