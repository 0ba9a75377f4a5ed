"""Real worker processes against a queue with a global concurrency: 6 workers of concurrency 8
never hold more than the limit's 5 messages at once. On the server engines, whose leases race
on row locks (PostgreSQL, MariaDB); SQLite serialises every lease, and the conformance suite
proves the bound on every engine with connections of its own."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tablequeue import Database
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_records

from .helpers import FAST_POLL, SYNC, MakeQueue, StartWorker, counter, enqueue

LIMIT, WORKERS, CONCURRENCY, MESSAGES = 5, 6, 8, 120


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The most intervals that overlap at one instant (an end before a start at a tie)."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


@pytest.mark.parametrize("db_url", ["postgresql", "mariadb"], indirect=True)
def test_workers_together_never_hold_more_messages_than_the_global_concurrency(
    database: Database,
    make_queue: MakeQueue,
    db_url: str,
    start_worker: StartWorker,
    records: Path,
) -> None:
    queue = make_queue("orders", global_concurrency=LIMIT)
    options = ("--batch-size", "10", "--concurrency", str(CONCURRENCY), *FAST_POLL)
    workers = [start_worker("orders", db_url, SYNC, *options) for _ in range(WORKERS)]
    for worker in workers:
        worker.wait_ready(timeout=120)  # six processes starting at once on a busy machine
    sampled: list[int] = []
    sampling = threading.Event()
    sampling.set()

    def sample() -> None:
        while sampling.is_set():
            sampled.append(queue.count(status="Leased"))

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        ids = enqueue(queue, [{"n": n, "sleep": 0.1} for n in range(MESSAGES)])
        wait_until(lambda: queue.count() == 0, timeout=120)
    finally:
        sampling.clear()
        sampler.join()

    found = read_records(records)
    starts = {i: at for event, i, at, _ in found if event == "start"}
    ends = {i: at for event, i, at, _ in found if event == "done"}
    assert sorted(starts) == sorted(ends) == sorted(ids)  # every message, once
    # A handler runs inside its message's lease (started after the lease committed, done
    # before the outcome is recorded): never more handlers at once than Leased messages.
    overlap = most_at_once([(starts[i], ends[i]) for i in ids])
    processes = {name for _, _, _, name in found}
    waited = sum(
        counter(w, "tablequeue_worker_concurrency_limited_total", queue="orders") for w in workers
    )
    deprecated = sum(
        counter(w, "tablequeue_worker_at_limit_total", queue="orders") for w in workers
    )
    print(
        f"{len(processes)} processes, most at once {overlap}, sampled {max(sampled)} "
        f"of {len(sampled)} samples, {waited} lease rounds at the limit"
    )
    assert overlap == LIMIT  # reached, never passed (48 handler slots would allow more)
    assert len(sampled) > 10 and max(sampled) <= LIMIT
    assert waited > 0  # the workers found the limit reached, and waited
    assert deprecated == waited  # the metric's old name counts the same until it goes
