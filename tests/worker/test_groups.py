"""Real worker processes against a queue with ordered groups (PostgreSQL and MariaDB: the
conformance suite covers every engine): several workers, several keys, one message of a key at
a time in id order, and a worker killed (SIGKILL) in the middle of a handler."""

from __future__ import annotations

import signal
import time
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path

import pytest

from tablequeue import Queue
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_records

from .helpers import FAST_POLL, SYNC, MakeQueue, StartWorker, enqueue
from .test_global_concurrency import most_at_once

KEYS, PER_KEY, WORKERS = ("a", "b", "c", "d"), 8, 3


def enqueue_keyed(
    queue: Queue, rounds: int, first: dict[str, object] | None = None
) -> dict[int, str]:
    """`rounds` messages of each key, interleaved (id -> key, in id order); the first message
    of key "a" gets `first` in its body."""
    keys = {}
    for n in range(rounds):
        for key in KEYS:
            body = {"n": n, "sleep": 0.05} | (first if n == 0 and key == "a" and first else {})
            [message_id] = enqueue(queue, [body], group_key=key)
            keys[message_id] = key
    return keys


def runs_per_key(
    queue_keys: dict[int, str], records: Path, killed_at: float | None = None
) -> dict[str, list[tuple[int, float, float]]]:
    """Each key's handler runs in the order they started: (id, start, end); a run without its
    `done` (its worker was killed) ends at `killed_at`."""
    starts: dict[int, list[float]] = defaultdict(list)
    dones: dict[int, list[float]] = defaultdict(list)
    for event, message_id, at, _ in read_records(records):
        if event in ("start", "done"):
            (starts if event == "start" else dones)[message_id].append(at)
    runs: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
    for message_id, times in starts.items():
        times.sort()
        for start, following in zip(times, [*times[1:], float("inf")], strict=True):
            ended = [at for at in dones[message_id] if start <= at < following]
            end = ended[0] if ended else killed_at
            assert end is not None, f"message {message_id} started at {start} and never ended"
            runs[queue_keys[message_id]].append((message_id, start, end))
    return {key: sorted(key_runs, key=lambda run: run[1]) for key, key_runs in runs.items()}


def assert_in_order_one_at_a_time(runs: dict[str, list[tuple[int, float, float]]]) -> None:
    for key, key_runs in runs.items():
        started = [message_id for message_id, _, _ in key_runs]
        assert started == sorted(started), f"key {key} started out of id order: {started}"
        for (_, _, end), (later, start, _) in pairwise(key_runs):
            assert start >= end, f"key {key}: {later} started before the one ahead ended"


@pytest.mark.parametrize("db_url", ["postgresql", "mariadb"], indirect=True)
def test_workers_run_each_key_in_id_order_one_at_a_time_even_when_one_is_killed(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, records: Path
) -> None:
    queue = make_queue(
        "orders",
        groups={"concurrency": 1},
        lease_seconds=2,
        on_lease_expired="Retry",
        max_attempts=5,
    )
    options = ("--batch-size", "4", "--concurrency", "4", "--sweep-interval", "0.5", *FAST_POLL)
    workers = [start_worker("orders", db_url, SYNC, *options) for _ in range(WORKERS)]
    for worker in workers:
        worker.wait_ready(timeout=120)

    keys = enqueue_keyed(queue, PER_KEY)
    first = list(keys)
    wait_until(lambda: queue.count() == 0, timeout=60)
    runs = runs_per_key(keys, records)
    assert sorted(i for key_runs in runs.values() for i, _, _ in key_runs) == first
    assert_in_order_one_at_a_time(runs)
    every_run = [(start, end) for key_runs in runs.values() for _, start, end in key_runs]
    assert most_at_once(every_run) > 1  # the keys ran beside each other

    # A worker killed while it runs the first message of key a: the key waits for the lapsed
    # lease (swept, retried), and nothing of it runs beside the retry or out of order.
    added = enqueue_keyed(queue, 3, first={"hang": True})
    keys |= added
    second = list(added)
    hung = second[0]
    wait_until(lambda: any(e == "start" and i == hung for e, i, _, _ in read_records(records)))
    [runner] = [name for e, i, _, name in read_records(records) if e == "start" and i == hung]
    [victim] = [w for w in workers if str(w.process.pid) == runner]
    victim.signal(signal.SIGKILL)
    assert victim.wait_exit() == -signal.SIGKILL
    killed_at = time.time()
    (records / "release").touch()  # the hung message runs through when retried
    wait_until(lambda: queue.count() == 0, timeout=60)

    runs = runs_per_key(keys, records, killed_at)
    assert_in_order_one_at_a_time(runs)
    # Every message ran through; one the killed worker finished but had not yet settled may
    # run through again (at least once), never beside another of its key (above).
    done = Counter(i for e, i, _, _ in read_records(records) if e == "done")
    assert sorted(done) == sorted(first + second)
    assert queue.count() == 0
    retried = [start for i, start, _ in runs["a"] if i == hung]
    assert len(retried) == 2 and retried[1] > killed_at  # run again after the lapsed lease
