"""Repeated SIGKILL of workers in the middle of their batches, under both lease policies, with
every message accounted for exactly: none lost; under `Abandon` none run twice; under `Retry`
only messages whose handler had started in a killed worker run twice. With a handler per message
and with a batch handler (one call for the messages of a lease)."""

from __future__ import annotations

import random
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tablequeue import connect
from tablequeue.spec import QueueResource
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_records
from tests.worker.helpers import BATCH, FAST_POLL, SYNC, StartWorker, WorkerProcess, enqueue

MESSAGES = 400
KILLS = 6
WORKERS = 2


def starts_of(records: Path) -> list[tuple[int, str]]:
    """(message id, records file of the process that started it) for every handler start."""
    return [
        (message_id, proc) for kind, message_id, _, proc in read_records(records) if kind == "start"
    ]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("handler", [SYNC, BATCH], ids=["handler", "batch-handler"])
@pytest.mark.parametrize("policy", ["Abandon", "Retry"])
def test_workers_killed_mid_batch_lose_nothing(
    postgres_url: str,
    start_worker: StartWorker,
    records: Path,
    policy: str,
    handler: str,
) -> None:
    database = connect(postgres_url)
    spec: dict[str, Any] = {
        "lease_seconds": 2,
        "on_lease_expired": policy,
        "keep_processed_for": "1h",
    }
    database.apply(QueueResource.from_name("orders", max_attempts=10, **spec))
    queue = database.queue("orders")
    ids = set(enqueue(queue, [{"sleep": 0.02, "n": n} for n in range(MESSAGES)]))
    options = ("--batch-size", "10", "--concurrency", "4", "--sweep-interval", "0.5", *FAST_POLL)
    running = [start_worker("orders", postgres_url, handler, *options) for _ in range(WORKERS)]
    killed: list[WorkerProcess] = []
    chooser = random.Random(17)
    for _ in range(KILLS):
        before = len(starts_of(records))
        # Mid-batch: a few more handlers have started since the last kill.
        wait_until(lambda: len(starts_of(records)) >= before + 15, timeout=60)  # noqa: B023
        victim = running.pop(chooser.randrange(len(running)))
        victim.signal(signal.SIGKILL)
        assert victim.wait_exit() == -signal.SIGKILL
        killed.append(victim)
        running.append(start_worker("orders", postgres_url, handler, *options))

    def settled() -> bool:
        counts = queue.stats().counts
        return not {"Pending", "Sleeping", "Leased"} & set(counts)

    wait_until(settled, timeout=120, interval=0.25)
    for worker in running:
        # A worker started last may not have set up its SIGTERM handling yet on a loaded machine
        # (the others drained the queue meanwhile): SIGTERM would end it as the default does.
        worker.wait_ready(timeout=60)
        worker.signal(signal.SIGTERM)
        assert worker.wait_exit() == 0

    statuses = {m.id: m.status for m in queue.messages(limit=10_000)}
    starts = starts_of(records)
    per_message = Counter(message_id for message_id, _ in starts)
    killed_files = {str(worker.process.pid) for worker in killed}
    started_in_killed = {message_id for message_id, proc in starts if proc in killed_files}
    lost = sorted(ids - {i for i, s in statuses.items() if s in ("Processed", "Abandoned")})
    duplicated = sorted(i for i, n in per_message.items() if n > 1)
    abandoned = sorted(i for i, s in statuses.items() if s == "Abandoned")
    print(
        f"chaos {policy}: {MESSAGES} messages, {WORKERS} workers, {len(killed)} SIGKILLs; "
        f"lost {len(lost)}, duplicated {len(duplicated)}, abandoned {len(abandoned)}, "
        f"handler starts {len(starts)}"
    )
    assert lost == []
    assert set(statuses) == ids
    if policy == "Abandon":
        assert duplicated == []
        killed_owners = {worker.name for worker in killed}
        for message in queue.messages(status="Abandoned", limit=10_000):
            assert message.lease_owner in killed_owners or any(
                f"held by {owner}" in (message.last_error or "") for owner in killed_owners
            ), message
    else:
        assert abandoned == []
        assert set(duplicated) <= started_in_killed
    database.close()
