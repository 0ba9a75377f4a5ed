"""The network between workers and their database cut (every connection dropped, new ones
refused) and restored, again and again under load: nothing lost, nothing run twice, and the
workers go on by themselves."""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import pytest

from tablequeue import NewMessage, connect
from tablequeue.spec import QueueResource
from tests.support.stored import stored_id
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_records
from tests.worker.helpers import FAST_POLL, SYNC, StartWorker, WorkerProcess

from .proxy import cuttable_proxy

MESSAGES = 1000
CUTS = 3


@pytest.mark.timeout(240)
def test_cut_network_loses_and_duplicates_nothing(
    postgres_url: str, start_worker: StartWorker, records: Path
) -> None:
    database = connect(postgres_url)
    database.apply(QueueResource.from_name("orders", lease_seconds=60, keep_processed_for="1h"))
    queue = database.queue("orders")
    port = int(database.url.port or 5432)
    with cuttable_proxy(port) as proxy:
        through_proxy = postgres_url.replace(f":{port}/", f":{proxy.port}/", 1)
        options = ("--batch-size", "10", "--concurrency", "4", *FAST_POLL)
        workers = [start_worker("orders", through_proxy, SYNC, *options) for _ in range(2)]
        bodies = [NewMessage(message={"n": n, "sleep": 0.02}) for n in range(MESSAGES)]
        ids = [stored_id(e) for e in queue.enqueue_many(bodies)]
        unfinished = []
        for _ in range(CUTS):
            before = len(read_records(records))
            wait_until(lambda: len(read_records(records)) >= before + 40, timeout=60)  # noqa: B023
            unfinished.append(queue.count(status="Processed") < MESSAGES)
            noticed = _unavailable(workers)
            proxy.cut()
            wait_until(lambda: _unavailable(workers) > noticed, timeout=30)  # noqa: B023
            proxy.restore()
        wait_until(lambda: queue.count(status="Processed") == MESSAGES, timeout=120, interval=0.25)
        starts = Counter(m for kind, m, _, _ in read_records(records) if kind == "start")
        statuses = {m.id: m.status for m in queue.messages(limit=10_000)}
        lost = [i for i in ids if statuses.get(i) != "Processed"]
        duplicated = [i for i, n in starts.items() if n > 1]
        print(
            f"chaos network: {MESSAGES} messages, {proxy.cuts} cuts, "
            f"lost {len(lost)}, duplicated {len(duplicated)}"
        )
        assert all(unfinished), unfinished
        assert lost == [] and duplicated == []
        for worker in workers:
            worker.signal(signal.SIGTERM)
            assert worker.wait_exit() == 0
    database.close()


def _unavailable(workers: list[WorkerProcess]) -> int:
    """How often the workers have logged that their database is unavailable."""
    return sum(
        worker.log_path.read_text(errors="replace").count("database unavailable")
        for worker in workers
    )
