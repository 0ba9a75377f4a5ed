"""PostgreSQL paused (SIGSTOP of the server and its backends) and resumed (SIGCONT) while
messages are enqueued and drained by real workers: every acknowledged enqueue is processed, none
twice (leases outlast the pauses), and the workers need no restart."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections import Counter
from pathlib import Path

import pytest

from tablequeue import NewMessage, connect
from tablequeue.spec import QueueResource
from tests.support.postgres_server import PostgresServer, postgres_server
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_records
from tests.worker.helpers import FAST_POLL, SYNC, StartWorker

BATCHES = 20
BATCH = 50
PAUSES = 3


def server_processes(server: PostgresServer) -> list[int]:
    """The postmaster and every process it started (its backends and helpers)."""
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == postmaster:
                children.append(int(entry.name))
    return [postmaster, *children]


def pause_all(pids: list[int], number: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, number)


@pytest.mark.timeout(240)
def test_paused_database_loses_and_duplicates_nothing(
    start_worker: StartWorker, records: Path
) -> None:
    with postgres_server() as server:
        url = server.create_database("paused")
        database = connect(url)
        database.apply(QueueResource.from_name("orders", lease_seconds=60, keep_processed_for="1h"))
        queue = database.queue("orders")
        options = ("--batch-size", "10", "--concurrency", "4", *FAST_POLL)
        workers = [start_worker("orders", url, SYNC, *options) for _ in range(2)]
        acknowledged: list[int] = []
        unfinished: list[bool] = []  # whether work was under way at each pause

        def enqueue_load() -> None:
            for batch in range(BATCHES):
                bodies = [
                    NewMessage(message={"n": batch * BATCH + n, "sleep": 0.02})
                    for n in range(BATCH)
                ]
                acknowledged.extend(e.id for e in queue.enqueue_many(bodies) if e.id is not None)

        loader = threading.Thread(target=enqueue_load)
        loader.start()
        for _ in range(PAUSES):
            before = len(read_records(records))
            wait_until(lambda: len(read_records(records)) >= before + 40, timeout=60)  # noqa: B023
            unfinished.append(queue.count(status="Processed") < BATCHES * BATCH)
            pids = server_processes(server)
            pause_all(pids, signal.SIGSTOP)
            try:
                threading.Event().wait(2.0)  # the outage itself, not a wait for a result
            finally:
                pause_all(pids, signal.SIGCONT)
        loader.join(timeout=120)
        assert not loader.is_alive()
        wait_until(
            lambda: queue.count(status="Processed") == BATCHES * BATCH, timeout=120, interval=0.25
        )
        starts = Counter(m for kind, m, _, _ in read_records(records) if kind == "start")
        statuses = {m.id: m.status for m in queue.messages(limit=10_000)}
        lost = [i for i in acknowledged if statuses.get(i) != "Processed"]
        duplicated = [i for i, n in starts.items() if n > 1]
        print(
            f"chaos pauses: {len(acknowledged)} enqueued under load, {PAUSES} pauses of 2 s, "
            f"lost {len(lost)}, duplicated {len(duplicated)}"
        )
        assert len(acknowledged) == BATCHES * BATCH
        assert all(unfinished), unfinished
        assert lost == [] and duplicated == []
        for worker in workers:  # alive after the pauses, and stopping cleanly
            worker.signal(signal.SIGTERM)
            assert worker.wait_exit() == 0
        database.close()
