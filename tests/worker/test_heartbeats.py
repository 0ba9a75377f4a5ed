"""Heartbeats of real worker processes in `tablequeue_workers`: they appear with their host,
pid and version, their counts and handlers in flight move, a worker killed with SIGKILL turns
stale, one stopped with SIGTERM leaves at once."""

from __future__ import annotations

import os
import signal
import socket
from importlib import metadata
from pathlib import Path

from tablequeue import Database
from tablequeue.models import WorkerInfo, stale_after
from tests.support.waiting import wait_until

from .helpers import FAST_POLL, SYNC, MakeQueue, StartWorker, enqueue

BEAT = ("--heartbeat-interval", "1")


def rows(database: Database) -> dict[str, WorkerInfo]:
    return {w.worker_id: w for w in database.workers("orders")}


def total(database: Database, field: str) -> int:
    return sum(getattr(w, field) for w in rows(database).values())


def test_workers_heartbeat_count_turn_stale_when_killed_and_leave_when_stopped(
    make_queue: MakeQueue, database: Database, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders")
    one = start_worker("orders", db_url, SYNC, *BEAT, *FAST_POLL, env={"POD_NAME": "orders-abc12"})
    two = start_worker("orders", db_url, SYNC, *BEAT, *FAST_POLL)
    seen = wait_until(lambda: len(found := rows(database)) == 2 and found, timeout=60)
    assert seen[one.name].host == "orders-abc12"  # the pod's name, from the downward API
    assert seen[two.name].host == socket.gethostname()
    assert (seen[one.name].pid, seen[two.name].pid) == (one.process.pid, two.process.pid)
    assert {w.version for w in seen.values()} == {metadata.version("tablequeue")}
    assert {w.state for w in seen.values()} == {"live"}
    assert {w.heartbeat_seconds for w in seen.values()} == {1.0}

    # Counts since start move with the outcomes the workers record.
    enqueue(queue, [{"n": n} for n in range(20)])
    enqueue(queue, [{"raise": "no price"}] * 3)
    wait_until(lambda: total(database, "processed") == 20, timeout=60)
    wait_until(lambda: total(database, "failed") == 3, timeout=60)
    # Handlers in flight are reported while they run.
    enqueue(queue, [{"hang": True}] * 2)
    wait_until(lambda: total(database, "in_flight") == 2, timeout=60)
    (records / "release").touch()
    # A handler leaves the in-flight count when it returns, and is counted as processed once
    # its outcome is recorded: a beat may fall in between, so wait for both.
    wait_until(
        lambda: (total(database, "in_flight"), total(database, "processed")) == (0, 22),
        timeout=60,
    )

    # SIGKILL: no goodbye; the row stays and turns stale once 3 beats (at least 10 s) are missed.
    os.kill(one.process.pid, signal.SIGKILL)
    one.process.wait(timeout=30)
    killed = wait_until(
        lambda: (w := rows(database)[one.name]).state == "stale" and w,
        timeout=stale_after(1.0) + 60,
    )
    assert killed.seconds_since_seen > stale_after(1.0)
    wait_until(lambda: rows(database)[two.name].state == "live", timeout=30)

    # SIGTERM: a clean stop removes the worker's row before the process exits.
    two.process.send_signal(signal.SIGTERM)
    assert two.process.wait(timeout=60) == 0
    assert set(rows(database)) == {one.name}
    assert any(line.get("message") == "worker stopped" for line in two.logs())


def test_a_missing_workers_table_is_made_once_and_unrecordable_beats_only_log(
    make_queue: MakeQueue, database: Database, db_url: str, start_worker: StartWorker
) -> None:
    """A registry from before tablequeue_workers: the worker makes the table and beats. Where it
    cannot (here: a view of that name stands in the way), it works on and says so once."""
    queue = make_queue("orders")
    with database.transaction() as connection:
        database.workers_table.drop(connection)
    worker = start_worker("orders", db_url, SYNC, *BEAT, *FAST_POLL)
    wait_until(lambda: worker.name in rows(database), timeout=60)
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(timeout=60) == 0

    with database.transaction() as connection:
        database.workers_table.drop(connection)
        connection.exec_driver_sql("CREATE VIEW tablequeue_workers AS SELECT 1 AS x")
    blocked = start_worker("orders", db_url, SYNC, *BEAT, *FAST_POLL)
    enqueue(queue, [{"n": n} for n in range(5)])
    wait_until(lambda: queue.count() == 0, timeout=60)  # it works regardless
    blocked.process.send_signal(signal.SIGTERM)
    assert blocked.process.wait(timeout=60) == 0
    warnings = [
        line for line in blocked.logs() if line.get("message") == "cannot record heartbeats"
    ]
    assert len(warnings) == 1
