"""Operations: metrics and probes, LISTEN/NOTIFY, configuration, refusals to start."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa

from tablequeue import Database
from tablequeue.spec import QueueResource
from tests.support.ports import free_port
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_records

from .helpers import (
    FAST_POLL,
    SYNC,
    MakeQueue,
    StartWorker,
    counter,
    enqueue,
    events,
    run_failing_worker,
)

# --- probes and metrics -----------------------------------------------------------------------


def test_metrics_and_probes(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders")
    good = enqueue(queue, [{"sleep": 0.05, "n": n} for n in range(120)])
    bad = enqueue(queue, [{"raise": "no"}] * 3)
    worker = start_worker("orders", db_url, SYNC, "--concurrency", "4", *FAST_POLL)
    worker.wait_ready()
    labels = {"queue": "orders"}
    # Scraped during the run: handlers in flight, never more than the concurrency.
    in_flight: list[float] = []

    def scrape_until_done() -> bool:
        in_flight.append(counter(worker, "tablequeue_worker_in_flight", **labels))
        return queue.count() == len(bad) and queue.count(status="Error") == len(bad)

    wait_until(scrape_until_done, timeout=60)
    assert max(in_flight) > 0 and max(in_flight) <= 4
    # The worker counts outcomes just after the database has recorded them: wait for both.
    outcomes = wait_until(
        lambda: (
            [
                counter(worker, "tablequeue_worker_messages_total", outcome=outcome, **labels)
                for outcome in ("processed", "errored")
            ]
            == [len(good), len(bad)]
        )
    )
    assert outcomes
    assert counter(worker, "tablequeue_worker_in_flight", **labels) == 0
    assert counter(worker, "tablequeue_worker_lease_batches_total", **labels) >= 1
    assert counter(worker, "tablequeue_worker_processing_seconds_count", **labels) == 123
    assert counter(worker, "tablequeue_worker_errors_total", kind="handler", **labels) == 3
    assert worker.get("/livez") == (200, "ok\n")
    assert worker.get("/readyz") == (200, "ok\n")


# --- LISTEN/NOTIFY ----------------------------------------------------------------------------


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_notify_wakes_an_idle_worker_long_before_its_next_poll(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders")
    # Polls 30 s apart: a wake-up by NOTIFY is told from the next poll with room to spare for a
    # loaded machine (a 2 s bound under 5 s polls was both tight and passed by a lucky poll).
    worker = start_worker("orders", db_url, SYNC, "--poll-min", "30", "--poll-max", "30")
    worker.wait_ready()

    def listening() -> bool:
        with psycopg.connect(db_url) as conn:
            query = "SELECT count(*) FROM pg_stat_activity WHERE query = 'LISTEN \"tq_orders\"'"
            row = conn.execute(query).fetchone()
            return bool(row and row[0])

    wait_until(listening, timeout=30)
    enqueued_at = time.time()
    [message_id] = enqueue(queue, [{"n": 1}])
    [(_, _, started_at, _)] = wait_until(
        lambda: [r for r in read_records(records) if r[0] == "start" and r[1] == message_id],
        timeout=30,
    )
    assert started_at - enqueued_at < 10.0, "woken by NOTIFY well before the 30 s poll"


def test_an_idle_worker_polls_less_often_up_to_its_maximum_and_again_at_once_after_work(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    """Issue 50 (NServiceBus's and AsyncMonolith's rows): between leases that find nothing the
    delay doubles from the minimum to the maximum (`--poll-min 0.05 --poll-max 0.5`), and after
    a lease that found work it starts again from the minimum. Read from the worker's debug log:
    the delays it chose, not times measured."""
    queue = make_queue("orders")
    worker = start_worker("orders", db_url, SYNC, *FAST_POLL, env={"TABLEQUEUE_LOG_LEVEL": "debug"})

    def delays() -> list[float]:
        return [
            line["next_lease_in"] for line in worker.logs() if line["message"] == "nothing leased"
        ]

    wait_until(lambda: len(delays()) >= 6, timeout=30)
    assert delays()[:6] == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5, 0.5])
    before = len(delays())
    [message_id] = enqueue(queue, [{"n": 1}])
    wait_until(lambda: message_id in events(records, "done"), timeout=30)

    def ramp_after_work() -> list[float] | None:
        """The delays since the enqueue, once three follow the first below the maximum (the
        first empty lease after the one that found the message)."""
        after = delays()[before:]
        work = next((i for i, delay in enumerate(after) if delay < 0.5), None)
        return after if work is not None and len(after) >= work + 3 else None

    after = wait_until(ramp_after_work, timeout=30)
    work = next(i for i, delay in enumerate(after) if delay < 0.5)
    assert after[:work] == pytest.approx([0.5] * work)
    assert after[work : work + 3] == pytest.approx([0.1, 0.2, 0.4])


# --- configuration ----------------------------------------------------------------------------


def test_configuration_from_environment_variables_only(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    # Started as the operator starts the sidecar: the console script, no flags at all, and a
    # handler module found in the working folder.
    console_script = Path(sys.executable).with_name("tablequeue")
    assert console_script.exists(), "the tablequeue console script is installed in the venv"
    queue = make_queue("orders")
    ids = enqueue(queue, [{"n": n} for n in range(20)])
    port = free_port()
    env = {
        "TABLEQUEUE_QUEUE": "orders",
        "TABLEQUEUE_DB": db_url,
        "TABLEQUEUE_HANDLER": SYNC,
        "TABLEQUEUE_PORT": str(port),
        "TABLEQUEUE_HOST": "127.0.0.1",
        "TABLEQUEUE_CONCURRENCY": "3",
        "TABLEQUEUE_BATCH_SIZE": "7",
        "TABLEQUEUE_POLL_MAX": "0.5",
        "TABLEQUEUE_OWNER": "from-env",
    }
    worker = start_worker(None, None, None, env=env, port=port, program=[str(console_script)])
    wait_until(lambda: queue.count() == 0, timeout=30)
    assert sorted(events(records, "done")) == sorted(ids)
    [started] = [line for line in worker.logs() if line["message"] == "worker started"]
    assert (started["owner"], started["concurrency"], started["batch_size"]) == ("from-env", 3, 7)
    assert started["poll"] == [0.1, 0.5]
    assert worker.ready()


def test_unknown_queue_waits_until_the_queue_exists(
    database: Database, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    worker = start_worker("orders", db_url, SYNC, *FAST_POLL)
    wait_until(lambda: len([x for x in worker.logs() if "orders" in x.get("error", "")]) >= 3)
    assert worker.get("/readyz")[0] == 503
    assert worker.get("/livez")[0] == 200
    assert worker.process.poll() is None, "keeps trying instead of exiting"

    database.apply(QueueResource.from_name("orders"))
    wait_until(worker.ready, timeout=30)
    queue = database.queue("orders")
    [message_id] = enqueue(queue, [{"n": 1}])
    wait_until(lambda: events(records, "done") == [message_id], timeout=30)


NOT_IDLE = "a due message is locked by another transaction: not idle"


@pytest.mark.parametrize("db_url", ["postgresql", "mariadb"], indirect=True)
def test_exit_when_idle_never_exits_while_a_due_message_is_locked_by_another_transaction(
    make_queue: MakeQueue,
    database: Database,
    db_url: str,
    start_worker: StartWorker,
    records: Path,
) -> None:
    """A lease skips the due messages other transactions hold locked (SKIP LOCKED): on MariaDB
    a sweep's UPDATE locks each message it reads for a moment, and 3 of 20 workers started with
    --exit-when-idle beside their own first sweep exited while a message was due. Here the
    lock is held until the worker has looked and stayed."""
    queue = make_queue("orders")
    [message_id] = enqueue(queue, [{"n": 1}])
    t = queue.table
    with database.engine.connect() as other:
        other.execute(sa.select(t.c.id).where(t.c.id == message_id).with_for_update())
        worker = start_worker(
            "orders", db_url, SYNC, "--exit-when-idle", "--log-level", "DEBUG", *FAST_POLL
        )

        def looked() -> bool:
            stayed = any(line["message"] == NOT_IDLE for line in worker.logs())
            return stayed or worker.process.poll() is not None

        wait_until(looked, timeout=60)
        assert worker.process.poll() is None, f"exited with message {message_id} due"
        other.rollback()
    assert worker.process.wait(timeout=60) == 0
    assert events(records, "done") == [message_id]
    assert queue.count() == 0


@pytest.mark.parametrize(
    ("handler", "problem"),
    [
        ("ftp://somewhere/process", "invalid handler 'ftp://somewhere/process'"),
        ("python:tests.no_such_module:handle", "handler module 'tests.no_such_module'"),
        ("python:tests.support.worker_handlers:no_such_function", "is not a function"),
        ("python:tests.support.worker_handlers:batch_with_context", "gets no HandlerContext"),
    ],
)
def test_invalid_handler_is_one_clear_error(tmp_path: Path, handler: str, problem: str) -> None:
    db_url = f"sqlite:///{tmp_path / 'q.db'}"
    line = run_failing_worker("--db", db_url, "--handler", handler, "--port", "0")
    assert problem in line


def test_probe_port_in_use_is_one_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        db_url = f"sqlite:///{tmp_path / 'q.db'}"
        line = run_failing_worker(
            "--db", db_url, "--handler", SYNC, "--host", "127.0.0.1", "--port", port
        )
    assert "cannot serve /livez, /readyz, /metrics" in line and "address already in use" in line
