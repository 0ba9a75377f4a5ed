"""Issue 44 (M6): a worker whose database is gone still stops on SIGTERM within its grace
period. It was still running 150 s after SIGTERM (grace 30 s), retrying its database; now the
grace period covers the database part too: past it the worker exits 1, naming what it leaves to
lease expiry (its leased messages, which the next worker retries: nothing is lost). With the
server stopped (connections refused) and with the server paused (SIGSTOP: connections that
never answer)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tablequeue import connect
from tablequeue.spec import QueueResource
from tests.support.postgres_server import PostgresServer, postgres_server
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_records
from tests.worker.helpers import FAST_POLL, SYNC, StartWorker, enqueue

pytestmark = pytest.mark.slow
GRACE = 3.0
EXIT_BOUND = GRACE + 30
"""The grace period, then the last database calls' own bounds (a connect, 10 s), with room
for a loaded machine; it was 150 s and more."""


@pytest.fixture
def server() -> Iterator[PostgresServer]:
    with postgres_server() as started:
        yield started


def postmaster(server: PostgresServer) -> int:
    return int((server.data / "postmaster.pid").read_text().split()[0])


def server_processes(server: PostgresServer) -> list[int]:
    """The postmaster and its children (backends, helpers): all of them to pause."""
    parent = postmaster(server)
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return [parent, *map(int, children)]


@pytest.mark.parametrize("gone", ["stopped", "paused"])
def test_sigterm_with_the_database_gone_exits_within_the_grace_period(
    server: PostgresServer, start_worker: StartWorker, records: Path, gone: str
) -> None:
    with connect(server.url) as db:
        db.apply(QueueResource.from_name("jobs", lease_seconds=60))
        enqueue(db.queue("jobs"), [{"sleep": 30}] * 2 + [{"n": n} for n in range(20)])
    worker = start_worker(
        "jobs", server.url, SYNC, *FAST_POLL, "--grace-period", str(GRACE), "--concurrency", "2"
    )
    wait_until(lambda: len([r for r in read_records(records) if r[0] == "start"]) >= 2)
    paused: list[int] = []
    try:
        if gone == "stopped":
            server.stop("immediate")
        else:
            paused = server_processes(server)
            for pid in paused:
                os.kill(pid, signal.SIGSTOP)
        worker.signal(signal.SIGTERM)
        code = worker.wait_exit(timeout=EXIT_BOUND)
    finally:
        for pid in paused:
            os.kill(pid, signal.SIGCONT)
    assert code == 1, worker.log_tail()
    left = [line for line in worker.logs() if line.get("message", "").startswith("shutdown cut")]
    assert left, worker.log_tail()
    assert "lease expiry" in left[0]["message"], left[0]
