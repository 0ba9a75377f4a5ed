"""Delivery: every message exactly once, across workers, SIGKILL, SIGTERM and a database restart."""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import pytest

from tablequeue import connect
from tablequeue.spec import QueueResource
from tests.support.postgres_server import postgres_server
from tests.support.waiting import wait_until

from .helpers import (
    ASYNC,
    FAST_POLL,
    SYNC,
    MakeQueue,
    StartWorker,
    all_messages,
    counter,
    enqueue,
    events,
)

# --- throughput and exactly-once --------------------------------------------------------------


def test_four_workers_process_every_message_exactly_once(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")
    total = 5000
    workers = [
        start_worker("orders", db_url, SYNC, "--concurrency", "4", "--batch-size", "20", *FAST_POLL)
        for _ in range(4)
    ]
    for worker in workers:
        worker.wait_ready()
    ids = set(enqueue(queue, [{"n": n} for n in range(total)]))
    wait_until(lambda: queue.count(status="Processed") == total, timeout=120, interval=0.25)

    done = events(records, "done")
    assert not [i for i, n in Counter(done).items() if n > 1], "handled twice"
    assert set(done) == ids
    assert queue.stats().counts == {"Processed": total}
    # Who takes which batch is the scheduler's business (on SQLite one writer at a time can
    # leave a worker without a single lease): more than one worker taking part is what shows.
    assert len({path.stem for path in records.glob("*.log")}) >= 2, "workers shared the work"

    # The lease batch id of each "leased batch" log line is the one stored on the rows it leased.
    rows = all_messages(queue).values()
    by_batch = Counter((m.correlation_id, m.lease_owner) for m in rows)
    logged = [
        (line["lease_batch_id"], worker.name, line["count"])
        for worker in workers
        for line in worker.logs()
        if line["message"] == "leased batch"
    ]
    assert sorted(logged) == sorted((cid, owner, n) for (cid, owner), n in by_batch.items())

    processed = "tablequeue_worker_messages_total"
    wait_until(
        lambda: (
            sum(counter(w, processed, outcome="processed", queue="orders") for w in workers)
            == total
        )
    )


# --- stopping: SIGKILL and SIGTERM ------------------------------------------------------------


@pytest.mark.parametrize("policy", ["Abandon", "Retry"])
def test_killed_worker_loses_nothing_its_leases_follow_the_policy(
    make_queue: MakeQueue,
    db_url: str,
    start_worker: StartWorker,
    records: Path,
    policy: str,
) -> None:
    queue = make_queue("orders", lease_seconds=2, on_lease_expired=policy, max_attempts=3)
    held = enqueue(queue, [{"hang": True}] * 4, priority=1)  # leased first, by the first worker
    others = enqueue(queue, [{"n": n} for n in range(6)])
    first = start_worker("orders", db_url, SYNC, "--batch-size", "4", "--concurrency", "2")
    wait_until(lambda: len(events(records, "start")) == 2)
    assert set(events(records, "start")) < set(held)
    first.signal(signal.SIGKILL)
    assert first.wait_exit() == -signal.SIGKILL
    (records / "release").touch()  # the held messages no longer hang when run again

    second = start_worker("orders", db_url, SYNC, "--sweep-interval", "0.5", *FAST_POLL)
    expected = "Abandoned" if policy == "Abandon" else None  # Retry: processed and deleted
    wait_until(
        lambda: (
            {i: m.status for i, m in all_messages(queue).items()}
            == dict.fromkeys(held if expected else [], expected)
        ),
        timeout=30,
    )
    done = events(records, "done")
    assert not [i for i, n in Counter(done).items() if n > 1]
    if policy == "Abandon":
        assert sorted(done) == sorted(others)
        for message in all_messages(queue).values():
            assert message.last_error and "lease expired; held by worker-1" in message.last_error
    else:
        assert sorted(done) == sorted(held + others)
    second.signal(signal.SIGTERM)
    assert second.wait_exit() == 0


def test_sigterm_finishes_running_handlers_and_releases_unstarted_ones(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    # Leases (4 s) shorter than the handlers (6 s) and someone sweeping all the time: the
    # stopping worker must keep extending its leases while its last handlers finish. (It
    # extends every third of the lease: 4 s leave a loaded machine over 2 s to do it in time.)
    queue = make_queue("orders", lease_seconds=4, keep_processed_for="1h")
    ids = enqueue(queue, [{"sleep": 6}] * 10)
    worker = start_worker(
        "orders", db_url, SYNC, "--batch-size", "6", "--concurrency", "2", "--grace-period", "30"
    )
    wait_until(lambda: len(events(records, "start")) == 2, timeout=30)
    running = events(records, "start")
    worker.signal(signal.SIGTERM)

    def swept_and_exited() -> bool:
        queue.sweep()  # what the other workers of the queue do
        return worker.process.poll() is not None

    wait_until(swept_and_exited, timeout=30)
    assert worker.process.returncode == 0

    messages = all_messages(queue)
    assert sorted(events(records, "done")) == sorted(running)
    for message_id in running:
        assert messages[message_id].status == "Processed"
    for message_id in set(ids) - set(running):
        assert (messages[message_id].status, messages[message_id].attempts) == ("Pending", 0)
    released = [line for line in worker.logs() if line["message"] == "released unstarted messages"]
    assert [line["count"] for line in released] == [4]


def test_sigterm_while_leasing_leaves_no_message_leased(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    # A busy worker with tiny batches spends much of its time in the lease statement, so a
    # SIGTERM often lands while one is under way: what it leases must be released too.
    queue = make_queue("orders", keep_processed_for="1h")
    enqueue(queue, [{"n": n} for n in range(3000)])
    for round_number in range(3):
        before = len(events(records, "done"))
        worker = start_worker(
            "orders", db_url, ASYNC, "--batch-size", "3", "--concurrency", "2", "--no-listen"
        )
        # (the lambda runs within this iteration only)
        wait_until(lambda: len(events(records, "done")) >= before + 30, timeout=30)  # noqa: B023
        worker.signal(signal.SIGTERM)
        assert worker.wait_exit() == 0
        counts = queue.stats().counts
        assert "Leased" not in counts, f"round {round_number}: {counts}"
        assert counts["Processed"] == len(events(records, "done"))
    assert {m.attempts for m in queue.messages(status="Pending", limit=10_000)} == {0}


# --- the database goes away -------------------------------------------------------------------


def test_worker_rides_out_a_database_restart(start_worker: StartWorker, records: Path) -> None:
    with postgres_server() as server:
        url = server.create_database("restart")
        with connect(url) as database:
            database.apply(QueueResource.from_name("orders", keep_processed_for="1h"))
            queue = database.queue("orders")
            first = enqueue(queue, [{"sleep": 0.02, "n": n} for n in range(300)])
            worker = start_worker(
                "orders", url, SYNC, "--concurrency", "4", "--batch-size", "10", *FAST_POLL
            )
            wait_until(lambda: len(events(records, "done")) >= 60, timeout=30)
            server.stop("fast")
            wait_until(lambda: worker.get("/readyz")[0] == 503, timeout=30)
            # Down long enough for the running handlers to finish: their outcomes must wait.
            trouble = "database unavailable"
            wait_until(lambda: [x for x in worker.logs() if x["message"] == trouble][3:], 30)
            assert worker.get("/livez")[0] == 200
            server.start()
            wait_until(worker.ready, timeout=60)
            second = enqueue(queue, [{"n": n} for n in range(100)])
            wait_until(lambda: queue.count(status="Processed") == 400, timeout=60, interval=0.25)
            done = events(records, "done")
            assert set(done) == set(first + second)
            assert not [i for i, n in Counter(done).items() if n > 1], "processed twice"
            assert worker.process.poll() is None
            worker.signal(signal.SIGTERM)
            assert worker.wait_exit() == 0
            database.engine.dispose()
