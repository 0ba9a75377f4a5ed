"""The worker beside its app in the pod: the app readiness gate (a worker started before its app,
an app that stops answering and comes back) and `GET /drained` (the app's preStop hook).

The app is a process of its own (`python -m tests.support.worker_app`), started late, killed and
restarted on the same port as a container of the pod would be.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tablequeue import Queue
from tablequeue.worker.drain import HOOKS_AWAITED, WAITING
from tests.support.ports import free_port
from tests.support.processes import die_with_parent
from tests.support.waiting import wait_until
from tests.support.worker_app import read_ids

from .helpers import (
    FAST_POLL,
    ROOT,
    SYNC,
    MakeQueue,
    StartWorker,
    WorkerProcess,
    all_messages,
    counter,
    enqueue,
    events,
)

GIVEN_BACK = "tablequeue_worker_app_given_back_total"


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def app_process(port: int, records: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The HTTP app as a process of its own on `port`, listening once this yields; killed
    (SIGKILL) on the way out if still running."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.worker_app", str(port), str(records)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        preexec_fn=die_with_parent,
    )
    try:
        wait_until(lambda: process.poll() is not None or _listening(port), timeout=30)
        assert process.poll() is None, "the app exited"
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


def _statuses(queue: Queue, ids: list[int]) -> dict[str, int]:
    found: dict[str, int] = {}
    messages = all_messages(queue)
    for message_id in ids:
        status = messages[message_id].status
        found[status] = found.get(status, 0) + 1
    return found


def _log_messages(worker: WorkerProcess) -> list[str]:
    return [str(line.get("message", "")) for line in worker.logs()]


def test_a_worker_started_before_its_app_leases_only_once_the_app_answers(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, tmp_path: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")  # maxAttempts 1: a failure is Error
    ids = enqueue(queue, [{"n": n} for n in range(30)])
    port, records = free_port(), tmp_path / "app-ids"
    handler = f"http://127.0.0.1:{port}/process"
    worker = start_worker("orders", db_url, handler, "--concurrency", "4", *FAST_POLL)

    waiting = f"not ready: waiting for the app at http://127.0.0.1:{port}/\n"
    wait_until(lambda: worker.get("/readyz") == (503, waiting), timeout=30)
    wait_until(lambda: "waiting for the app before leasing" in _log_messages(worker), timeout=30)
    assert queue.count(status="Pending") == len(ids)  # nothing leased while the app is away

    with app_process(port, records):
        wait_until(lambda: _statuses(queue, ids) == {"Processed": len(ids)}, timeout=60)
        assert worker.get("/readyz") == (200, "ok\n")

    messages = all_messages(queue)
    assert [messages[i].attempts for i in ids] == [1] * len(ids)
    assert sorted(read_ids(str(records))) == sorted(ids)  # each POSTed exactly once
    [answered] = [line for line in worker.logs() if "the app answered" in line["message"]]
    assert answered["waited_seconds"] > 0
    assert counter(worker, GIVEN_BACK, queue="orders") == 0  # nothing was leased before


def test_an_app_that_stops_answering_gets_its_messages_later_without_attempts(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, tmp_path: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")  # maxAttempts 1: a failure is Error
    port, records = free_port(), tmp_path / "app-ids"
    handler = f"http://127.0.0.1:{port}/process"
    options = ("--concurrency", "4", "--batch-size", "10", *FAST_POLL)
    with app_process(port, records) as app:
        worker = start_worker("orders", db_url, handler, *options)
        first = enqueue(queue, [{"n": n} for n in range(5)])
        wait_until(lambda: _statuses(queue, first) == {"Processed": 5}, timeout=60)
        assert worker.ready()
        app.kill()  # idle: no request of the worker is under way
        app.wait()

    # Messages leased now find nothing listening: given back, the gate closed.
    second = enqueue(queue, [{"n": n} for n in range(5, 30)])
    wait_until(lambda: counter(worker, GIVEN_BACK, queue="orders") > 0, timeout=60)
    waiting = f"not ready: waiting for the app at http://127.0.0.1:{port}/ (it stopped answering)\n"
    wait_until(lambda: worker.get("/readyz") == (503, waiting), timeout=30)
    wait_until(lambda: queue.count(status="Leased") == 0, timeout=30)  # all given back
    messages = all_messages(queue)
    assert {messages[i].status for i in second} == {"Pending"}
    assert {messages[i].attempts for i in second} == {0}  # no attempt counted
    assert "the app stopped answering: leasing paused, unstarted messages given back" in (
        _log_messages(worker)
    )

    with app_process(port, records):  # the app is back, on the same port
        wait_until(lambda: _statuses(queue, second) == {"Processed": 25}, timeout=60)
        wait_until(worker.ready, timeout=30)

    messages = all_messages(queue)
    assert [messages[i].attempts for i in first + second] == [1] * 30
    assert queue.count(status="Error") == 0
    assert sorted(read_ids(str(records))) == sorted(first + second)  # each POSTed exactly once
    assert counter(worker, "tablequeue_worker_errors_total", kind="handler", queue="orders") == 0
    assert worker.process.poll() is None


def test_sigterm_while_waiting_for_the_app_exits_at_once_leaving_every_message_pending(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker
) -> None:
    queue = make_queue("orders")
    ids = enqueue(queue, [{"n": n} for n in range(3)])
    with socket.socket() as taken:  # bound, never listening: the app never comes
        taken.bind(("127.0.0.1", 0))
        handler = f"http://127.0.0.1:{taken.getsockname()[1]}/process"
        worker = start_worker("orders", db_url, handler, "--grace-period", "30", *FAST_POLL)
        wait_until(lambda: "waiting for the app" in worker.get("/readyz")[1], timeout=30)
        drained = Drained(worker, queue)
        drained.start()
        drained.wait_pending()
        sent = time.monotonic()
        worker.signal(signal.SIGTERM)
        assert worker.wait_exit() == 0
        drained.join(timeout=60)
    assert drained.answer == (200, "drained\n") and drained.at - sent < 5
    messages = all_messages(queue)
    assert [(messages[i].status, messages[i].attempts) for i in ids] == [("Pending", 0)] * 3


# --- GET /drained ---------------------------------------------------------------------------


class Drained(threading.Thread):
    """`GET /drained` from a thread of its own: its answer, when it came (monotonic), and the
    status of `message_id` read at that moment."""

    def __init__(self, worker: WorkerProcess, queue: Queue, message_id: int | None = None):
        super().__init__(daemon=True)
        self.worker, self.queue, self.message_id = worker, queue, message_id
        self.answer: tuple[int, str] | None = None
        self.at = 0.0
        self.status_then: Any = None

    def wait_pending(self) -> None:
        """Until the worker has the request and waits (its log says so), still unanswered."""
        wait_until(lambda: WAITING in _log_messages(self.worker), timeout=30)
        assert self.answer is None

    def run(self) -> None:
        self.answer = _get(self.worker, "/drained", timeout=120)
        self.at = time.monotonic()
        if self.message_id is not None:
            self.status_then = self.queue.get(self.message_id).status


def _get(worker: WorkerProcess, path: str, timeout: float) -> tuple[int, str]:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{worker.port}{path}", timeout=timeout) as r:
        return int(r.status), r.read().decode()


def test_drained_answers_once_the_running_handler_is_done(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")
    [slow] = enqueue(queue, [{"sleep": 2}])
    worker = start_worker("orders", db_url, SYNC, *FAST_POLL)
    wait_until(lambda: events(records, "start") == [slow], timeout=30)
    drained = Drained(worker, queue, slow)
    drained.start()  # before SIGTERM: it waits for the SIGTERM, then for the drain
    drained.wait_pending()
    worker.signal(signal.SIGTERM)
    drained.join(timeout=60)
    assert drained.answer == (200, "drained\n")
    assert drained.status_then == "Processed"  # recorded before /drained answered
    assert events(records, "done") == [slow]
    assert worker.wait_exit() == 0


def test_drained_answers_at_once_on_an_idle_worker_after_sigterm(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker
) -> None:
    queue = make_queue("orders")
    worker = start_worker("orders", db_url, SYNC, "--grace-period", "30", *FAST_POLL)
    worker.wait_ready()
    drained = Drained(worker, queue)
    drained.start()
    drained.wait_pending()  # no SIGTERM yet
    sent = time.monotonic()
    worker.signal(signal.SIGTERM)
    drained.join(timeout=60)
    assert drained.answer == (200, "drained\n")
    assert drained.at - sent < 5  # not the grace period (30 s) + 10 s
    assert worker.wait_exit() == 0


def test_drained_never_waits_longer_than_the_grace_period_and_ten_seconds(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker
) -> None:
    queue = make_queue("orders")
    worker = start_worker("orders", db_url, SYNC, "--grace-period", "0", *FAST_POLL)
    worker.wait_ready()
    started = time.monotonic()
    status, text = _get(worker, "/drained", timeout=60)  # no SIGTERM comes
    assert (status, text) == (200, "not drained after 10s (grace period + 10s): go on\n")
    assert 10 <= time.monotonic() - started < 20
    assert worker.process.poll() is None
    assert queue.count() == 0


def test_an_idle_worker_stays_to_answer_the_pre_stop_hook_that_comes_after_its_sigterm(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker
) -> None:
    """The kubelet starts the app's preStop hook and the worker's SIGTERM together: an idle
    worker drains at once, and without waiting for the hook it would be gone when the hook
    connects (a FailedPreStopHook event). Told of one hook, it waits for it, then exits."""
    make_queue("orders")
    worker = start_worker("orders", db_url, SYNC, "--prestop-hooks", "1", *FAST_POLL)
    worker.wait_ready()
    worker.signal(signal.SIGTERM)
    wait_until(lambda: HOOKS_AWAITED in _log_messages(worker), timeout=30, interval=0.01)
    assert _get(worker, "/drained", timeout=30) == (200, "drained\n")
    assert worker.wait_exit() == 0


class _App(http.server.BaseHTTPRequestHandler):
    """An app served from the test: POSTs are processed (200); GET has no handler of its own
    (http.server answers 501) unless `unavailable` makes it a 503."""

    unavailable = threading.Event()
    posted: list[int] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.posted.append(body["id"])
        self._answer(200, b"{}")

    def do_GET(self) -> None:
        if not self.unavailable.is_set():
            self.send_error(501, "no GET here")  # as a server without a GET handler answers
            return
        self._answer(503, b"starting")

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


def test_an_app_without_a_get_handler_listens_and_a_503_keeps_the_worker_waiting_saying_so(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker
) -> None:
    """Issue 44 (left open): any answer of 500 and above counted as "not listening", so an app
    without a GET handler (501) was never ready and the worker waited silently for ever. Only
    refused connections, 502, 503 and 504 mean "not yet", and the wait is logged now and then."""
    queue = make_queue("orders", keep_processed_for="1h")
    _App.posted.clear()
    _App.unavailable.set()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _App)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        worker = start_worker("orders", db_url, f"{url}/process", *FAST_POLL)
        ids = enqueue(queue, [{"n": n} for n in range(5)])
        still = f"still waiting for the app at {url}/ after"

        def said_still_waiting() -> dict[str, Any] | None:
            lines = [line for line in worker.logs() if line["message"].startswith(still)]
            return lines[0] if lines else None

        said = wait_until(said_still_waiting, timeout=60)
        assert said["got"] == "HTTP 503", said
        assert queue.count(status="Pending") == len(ids) and _App.posted == []
        _App.unavailable.clear()  # now GET is a 501: an app that listens
        wait_until(lambda: _statuses(queue, ids) == {"Processed": len(ids)}, timeout=60)
        assert sorted(_App.posted) == sorted(ids)
    finally:
        server.shutdown()
