"""The worker sidecar, end to end: real `tablequeue worker` processes against real databases.

Workers run as subprocesses (`python -m tablequeue worker ...`, cwd = the project, so the
handlers of `tests.support.worker_handlers` import); their JSON logs go to a file per worker,
shown on failure. Handlers record what they do (`tests/support/worker_handlers.py`), so each
test can check exactly which messages ran, where, and how often, next to what the database shows.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tablequeue import Database, NewMessage, Queue, connect
from tablequeue.spec import QueueResource
from tests.support import worker_app
from tests.support.postgres_server import free_port, postgres_server
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_records

ROOT = Path(__file__).resolve().parents[2]
SYNC = "python:tests.support.worker_handlers:handle"
ASYNC = "python:tests.support.worker_handlers:handle_async"
FAST_POLL = ("--poll-min", "0.05", "--poll-max", "0.5")
MakeQueue = Callable[..., Queue]


@dataclass
class WorkerProcess:
    name: str
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    def get(self, path: str) -> tuple[int, str]:
        """GET a probe or /metrics: (status, text), or (0, "") while nothing listens."""
        url = f"http://127.0.0.1:{self.port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return int(response.status), response.read().decode()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode()
        except OSError:
            return 0, ""

    def ready(self) -> bool:
        return self.get("/readyz")[0] == 200

    def wait_ready(self, timeout: float = 30.0) -> None:
        wait_until(lambda: self.ready() or self.process.poll() is not None, timeout)
        assert self.process.poll() is None, f"{self.name} exited: {self.log_tail()}"

    def logs(self) -> list[dict[str, Any]]:
        lines = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
        return lines

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def metrics(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        status, text = self.get("/metrics")
        assert status == 200, text
        return {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    def signal(self, number: int) -> None:
        self.process.send_signal(number)

    def wait_exit(self, timeout: float = 30.0) -> int:
        wait_until(lambda: self.process.poll() is not None, timeout)
        return self.process.returncode


StartWorker = Callable[..., WorkerProcess]


@pytest.fixture
def records(tmp_path: Path) -> Path:
    folder = tmp_path / "records"
    folder.mkdir()
    return folder


@pytest.fixture
def start_worker(tmp_path: Path, records: Path) -> Iterator[StartWorker]:
    """Start `tablequeue worker` subprocesses; every one is killed at teardown."""
    started: list[WorkerProcess] = []
    clean_env = {k: v for k, v in os.environ.items() if not k.startswith("TABLEQUEUE_")}

    def start(
        queue: str | None,
        db_url: str | None,
        handler: str | None = SYNC,
        *options: str,
        env: dict[str, str] | None = None,
        port: int | None = None,
        program: list[str] | None = None,
    ) -> WorkerProcess:
        name = f"worker-{len(started) + 1}"
        port = port or free_port()
        command = [*(program or [sys.executable, "-m", "tablequeue"]), "worker"]
        for flag, value in (("--queue", queue), ("--db", db_url), ("--handler", handler)):
            if value is not None:
                command += [flag, value]
        if env is None or "TABLEQUEUE_PORT" not in env:
            command += ["--port", str(port), "--host", "127.0.0.1", "--owner", name]
        command += options
        log_path = tmp_path / f"{name}.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=clean_env | {"TQ_RECORDS": str(records)} | (env or {}),
            )
        worker = WorkerProcess(name, process, port, log_path)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        if worker.process.poll() is None:
            worker.process.kill()
        worker.process.wait()
        print(f"--- {worker.name} (exit {worker.process.returncode}) ---\n{worker.log_tail()}")


def enqueue(queue: Queue, bodies: list[Any], **options: Any) -> list[int]:
    done = queue.enqueue_many([NewMessage(message=body, **options) for body in bodies])
    ids = [e.id for e in done]
    assert None not in ids
    return [i for i in ids if i is not None]


def all_messages(queue: Queue) -> dict[int, Any]:
    return {m.id: m for m in queue.messages(limit=10_000)}


def events(records: Path, event: str) -> list[int]:
    return [message_id for kind, message_id, _, _ in read_records(records) if kind == event]


def counter(worker: WorkerProcess, name: str, **labels: str) -> float:
    return worker.metrics().get((name, frozenset(labels.items())), 0.0)


# --- throughput and exactly-once -----------------------------------------------------------


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
    assert len({path.stem for path in records.glob("*.log")}) == 4, "every worker took part"

    # The correlation id of each "leased batch" log line is the one stored on the rows it leased.
    rows = all_messages(queue).values()
    by_batch = Counter((m.correlation_id, m.lease_owner) for m in rows)
    logged = [
        (line["correlation_id"], worker.name, line["count"])
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


# --- stopping: SIGKILL and SIGTERM ---------------------------------------------------------


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
    # Leases (2 s) shorter than the handlers (3 s) and someone sweeping all the time: the
    # stopping worker must keep extending its leases while its last handlers finish.
    queue = make_queue("orders", lease_seconds=2, keep_processed_for="1h")
    ids = enqueue(queue, [{"sleep": 3}] * 10)
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


# --- the database goes away ----------------------------------------------------------------


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


# --- handler outcomes ----------------------------------------------------------------------


def test_execution_timeout_is_a_failure_retried_per_max_attempts(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", max_attempts=2, retry={"delay_seconds": 0, "jitter": 0})
    [slow] = enqueue(queue, [{"sleep": 60}])
    worker = start_worker("orders", db_url, ASYNC, "--execution-timeout", "0.5", *FAST_POLL)
    wait_until(lambda: queue.get(slow).status == "Error", timeout=30)
    message = queue.get(slow)
    assert message.attempts == 2
    assert message.last_error == "execution time limit of 0.5s exceeded"
    assert events(records, "cancelled") == [slow, slow]  # the handler was stopped both times
    assert events(records, "done") == []
    timeouts = ("tablequeue_worker_errors_total", "timeout")
    assert counter(worker, timeouts[0], kind=timeouts[1], queue="orders") == 2


def test_sync_handler_that_hangs_past_the_limit_does_not_block_the_worker_from_exiting(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    # A thread cannot be stopped: the message fails at the limit, and SIGTERM still ends the
    # worker after its grace period although the handler's thread is still running.
    queue = make_queue("orders")
    [hung] = enqueue(queue, [{"hang": True}])
    worker = start_worker(
        "orders", db_url, SYNC, "--execution-timeout", "0.5", "--grace-period", "1", *FAST_POLL
    )
    wait_until(lambda: queue.get(hung).status == "Error", timeout=30)
    assert queue.get(hung).last_error == "execution time limit of 0.5s exceeded"
    [other] = enqueue(queue, [{"n": 1}])
    wait_until(lambda: other in events(records, "done"), timeout=30)
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(timeout=20) == 0
    assert events(records, "done") == [other]


@pytest.fixture
def app() -> Iterator[worker_app.App]:
    with worker_app.serve() as served:
        yield served


def test_http_handler_outcomes(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, app: worker_app.App
) -> None:
    queue = make_queue(
        "orders", keep_processed_for="1h", max_attempts=3, retry={"delay_seconds": 3600}
    )
    again_at = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=123000)
    [failing] = enqueue(queue, [{"status": 500, "text": "the app's database is down"}])
    [hopeless] = enqueue(
        queue, [{"status": 422, "json": {"retry": False, "error": "no such customer"}}]
    )
    [garbled] = enqueue(queue, [{"status": 503, "hex": "ff fe 20 62 75 73 79"}])  # not UTF-8
    [again] = enqueue(queue, [{"status": 200, "json": {"processAgainAt": again_at.isoformat()}}])
    [result] = enqueue(
        queue,
        [{"status": 200, "json": {"result": {"total": 3}, "progress": {"done": 100}}}],
        message_id="order-1",
        headers={"traceparent": "00-abc-def-01"},
    )
    worker = start_worker("orders", db_url, app.url, *FAST_POLL)
    wait_until(lambda: len(app.payloads()) == 5, timeout=30)
    wait_until(lambda: queue.count(status="Leased") == 0, timeout=30)
    messages = all_messages(queue)

    assert messages[failing].status == "Sleeping" and messages[failing].attempts == 1
    assert messages[failing].last_error == "HTTP 500: the app's database is down"
    assert messages[hopeless].status == "Error" and messages[hopeless].attempts == 1
    assert "no such customer" in (messages[hopeless].last_error or "")
    assert messages[garbled].status == "Sleeping" and messages[garbled].attempts == 1
    assert messages[garbled].last_error == "HTTP 503: \ufffd\ufffd busy"
    assert messages[again].status == "Sleeping"
    assert messages[again].process_after == again_at
    assert messages[result].status == "Processed"
    assert (messages[result].result, messages[result].progress) == ({"total": 3}, {"done": 100})

    [sent] = [p for p in app.payloads() if p["id"] == result]
    stored = messages[result]
    assert sent == {
        "id": result,
        "messageId": "order-1",
        "message": stored.message,
        "previousMessage": None,
        "attempts": 1,
        "headers": {"traceparent": "00-abc-def-01"},
        "correlationId": stored.correlation_id,
        "trackingId": str(stored.tracking_id),
    }
    assert worker.process.poll() is None


def test_http_handler_that_is_down_is_a_failure(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker
) -> None:
    queue = make_queue("orders")
    [message_id] = enqueue(queue, [{"n": 1}])
    nobody = f"http://127.0.0.1:{free_port()}/process"
    start_worker("orders", db_url, nobody, *FAST_POLL)
    wait_until(lambda: queue.get(message_id).status == "Error", timeout=30)
    error = queue.get(message_id).last_error or ""
    assert f"handler at {nobody} unreachable" in error


def test_outcomes_no_database_can_store_fail_their_message_and_block_nothing(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker
) -> None:
    queue = make_queue("orders", keep_processed_for="1h", max_attempts=1)
    [nan] = enqueue(queue, [{"nan_result": True}])
    [nul] = enqueue(queue, [{"nul_error": True}])
    fine = enqueue(queue, [{"n": n} for n in range(20)])
    start_worker("orders", db_url, ASYNC, *FAST_POLL)
    wait_until(lambda: queue.count(status="Processed") == 20, timeout=30)
    wait_until(lambda: queue.count(status="Error") == 2, timeout=30)
    assert "invalid result" in (queue.get(nan).last_error or "")
    assert "NUL \\x00 in the error text" in (queue.get(nul).last_error or "")
    assert {m.id for m in queue.messages(status="Processed")} == set(fine)


def test_python_handlers_sync_and_async(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    sync_queue = make_queue(
        "sync-orders", keep_processed_for="1h", max_attempts=3, retry={"delay_seconds": 3600}
    )
    async_queue = make_queue("async-orders", keep_processed_for="1h")
    [raising] = enqueue(sync_queue, [{"raise": "kaboom"}])
    [hopeless] = enqueue(sync_queue, [{"permanent": "no such customer"}])
    [returning] = enqueue(sync_queue, [{"outcome": {"result": "sent", "progress": 1}}])
    [async_ok] = enqueue(async_queue, [{"sleep": 0.1, "result": {"ok": True}, "progress": 50}])
    [async_raising] = enqueue(async_queue, [{"raise": "async kaboom"}])
    start_worker("sync-orders", db_url, SYNC, *FAST_POLL)
    start_worker("async-orders", db_url, ASYNC, *FAST_POLL)

    def settled() -> bool:  # every message tried once (a retry on sync-orders is an hour off)
        queues = (sync_queue, async_queue)
        return not any(q.count(status=s) for q in queues for s in ("Pending", "Leased"))

    wait_until(settled, timeout=30)

    failed = sync_queue.get(raising)
    assert (failed.status, failed.attempts) == ("Sleeping", 1)  # retried later (maxAttempts 3)
    assert failed.last_error and failed.last_error.startswith("Traceback (most recent call last)")
    assert "worker_handlers.py" in failed.last_error
    assert failed.last_error.rstrip().endswith("RuntimeError: kaboom")
    given_up = sync_queue.get(hopeless)
    assert (given_up.status, given_up.attempts) == ("Error", 1)
    assert given_up.last_error == "PermanentFailure: no such customer"
    ok = sync_queue.get(returning)
    assert (ok.status, ok.result, ok.progress) == ("Processed", "sent", 1)

    ok = async_queue.get(async_ok)
    assert (ok.status, ok.result, ok.progress) == ("Processed", {"ok": True}, 50)
    failed = async_queue.get(async_raising)
    assert failed.status == "Error"
    assert failed.last_error and failed.last_error.rstrip().endswith("RuntimeError: async kaboom")


# --- cancellation --------------------------------------------------------------------------


def test_cancelling_a_message_stops_its_running_handler(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")
    [running, other] = enqueue(queue, [{"sleep": 60}, {"sleep": 0.2}])
    worker = start_worker("orders", db_url, ASYNC, *FAST_POLL)
    wait_until(lambda: running in events(records, "start"), timeout=30)
    queue.cancel(queue.get(running).tracking_id)
    wait_until(lambda: running in events(records, "cancelled"), timeout=10)
    wait_until(
        lambda: [
            line
            for line in worker.logs()
            if line["message"].startswith("handler stopped: lease lost")
            and line.get("message_id") == running
        ],
        timeout=10,
    )
    wait_until(lambda: queue.get(other).status == "Processed", timeout=30)
    assert queue.get(running).status == "Cancelled"
    assert running not in events(records, "done")
    assert counter(worker, "tablequeue_worker_messages_total", outcome="lost", queue="orders") == 1


# --- probes and metrics --------------------------------------------------------------------


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
    processed = wait_until(
        lambda: (
            counter(worker, "tablequeue_worker_messages_total", outcome="processed", **labels)
            == len(good)
        )
    )
    assert processed
    assert counter(worker, "tablequeue_worker_messages_total", outcome="errored", **labels) == 3
    assert counter(worker, "tablequeue_worker_in_flight", **labels) == 0
    assert counter(worker, "tablequeue_worker_lease_batches_total", **labels) >= 1
    assert counter(worker, "tablequeue_worker_processing_seconds_count", **labels) == 123
    assert counter(worker, "tablequeue_worker_errors_total", kind="handler", **labels) == 3
    assert worker.get("/livez") == (200, "ok\n")
    assert worker.get("/readyz") == (200, "ok\n")


# --- LISTEN/NOTIFY -------------------------------------------------------------------------


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_notify_wakes_an_idle_worker_long_before_its_next_poll(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders")
    worker = start_worker("orders", db_url, SYNC, "--poll-min", "5", "--poll-max", "5")
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
        timeout=10,
    )
    assert started_at - enqueued_at < 2.0, "woken by NOTIFY well before the 5 s poll"


# --- handler context ---------------------------------------------------------------------


def test_python_handler_enqueues_a_follow_up_through_its_context(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    orders = make_queue("orders")
    other = make_queue("other")
    [order] = enqueue(orders, [{"order": "A-1"}])
    start_worker("orders", db_url, "python:tests.support.worker_handlers:follow_up", *FAST_POLL)
    wait_until(lambda: orders.count() == 0, timeout=30)
    [follow] = other.messages()
    assert follow.message == {"followUpOf": order, "order": "A-1"}
    assert follow.message_id == f"follow-up-{order}"
    assert follow.status == "Pending"


# --- configuration -----------------------------------------------------------------------


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


def run_failing_worker(*options: str) -> str:
    """Run a worker that must refuse to start; returns its one line on stderr."""
    command = [sys.executable, "-m", "tablequeue", "worker", "--queue", "orders", *options]
    done = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("TABLEQUEUE_")},
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ")
    return line


@pytest.mark.parametrize(
    ("handler", "problem"),
    [
        ("ftp://somewhere/process", "invalid handler 'ftp://somewhere/process'"),
        ("python:tests.no_such_module:handle", "handler module 'tests.no_such_module'"),
        ("python:tests.support.worker_handlers:no_such_function", "is not a function"),
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
