"""Leases: marking rows, never twice, extend and release, many processes, crashes.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tablequeue import NewMessage
from tests.support.waiting import wait_until

from .helpers import ROOT, MakeQueue


def test_lease_marks_rows_and_never_hands_out_a_row_twice(make_queue: MakeQueue) -> None:
    queue = make_queue(lease_seconds=60)
    queue.enqueue_many([NewMessage(message={"n": n}) for n in range(7)])
    first = queue.lease("w1", 4, correlation_id="batch-1")
    second = queue.lease("w2", 4)
    assert len(first.messages) == 4 and len(second.messages) == 3
    assert not {m.id for m in first.messages} & {m.id for m in second.messages}
    m = first.messages[0]
    assert (m.status, m.attempts, m.lease_owner, m.correlation_id) == ("Leased", 1, "w1", "batch-1")
    assert m.lease_expires_at is not None
    remaining = (m.lease_expires_at - datetime.now(UTC)).total_seconds()
    assert 50 < remaining <= 61
    assert queue.lease("w3", 4).messages == []


def test_extend_and_release(make_queue: MakeQueue) -> None:
    queue = make_queue(lease_seconds=30)
    queue.enqueue_many([NewMessage(message={"n": n}) for n in range(3)])
    leased = queue.lease("w1", 3).messages
    ids = [m.id for m in leased]
    assert queue.extend("w1", ids, lease_seconds=600) == set(ids)
    assert queue.get(ids[0]).lease_expires_at > datetime.now(UTC) + timedelta(seconds=500)  # type: ignore[operator]
    assert queue.extend("someone-else", ids) == set()
    assert queue.release("w1", ids[1:]) == 2
    assert [queue.get(i).status for i in ids] == ["Leased", "Pending", "Pending"]
    assert queue.get(ids[1]).attempts == 0


@pytest.mark.slow  # eight processes drain 20,000 messages
def test_a_sweep_never_hides_a_due_message_from_a_lease(make_queue: MakeQueue) -> None:
    """While sweeps run back to back, every lease gets the one due message. On MariaDB the
    sweep's UPDATE of expired messages locked each leasable message it read, and a lease
    (SKIP LOCKED) passed over it: about 4 leases in 10 took nothing."""
    queue = make_queue()
    later = datetime.now(UTC) + timedelta(days=1)
    [due] = queue.enqueue_many([NewMessage(message={"n": 1}, expires_at=later)])
    sweeping = threading.Event()
    sweeping.set()
    failed: list[BaseException] = []

    def sweep() -> None:
        try:
            while sweeping.is_set():
                queue.sweep()
        except BaseException as error:
            failed.append(error)

    sweeper = threading.Thread(target=sweep)
    sweeper.start()
    try:
        for _ in range(300):
            leased = queue.lease("w1", 10).messages
            assert [m.id for m in leased] == [due.id]
            assert queue.release("w1", [due.id or 0]) == 1
    finally:
        sweeping.clear()
        sweeper.join()
    assert failed == []


def test_eight_processes_get_each_of_20000_messages_exactly_once(
    db_url: str, make_queue: MakeQueue, tmp_path: Path
) -> None:
    queue = make_queue()
    for start in range(0, 20_000, 2_000):
        queue.enqueue_many([NewMessage(message={"n": n}) for n in range(start, start + 2_000)])
    expected = {m.id for m in queue.messages(limit=10_000)}
    expected |= {m.id for m in queue.messages(limit=10_000, after_id=max(expected))}
    assert len(expected) == 20_000
    outputs = [tmp_path / f"drained-{i}.txt" for i in range(8)]
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.lifecycle_client",
                "drain",
                db_url,
                "orders",
                str(out),
                "50",
            ],
            cwd=ROOT,
        )
        for out in outputs
    ]
    for process in processes:
        assert process.wait(timeout=600) == 0
    leased = [int(line) for out in outputs for line in out.read_text().split()]
    assert len(leased) == 20_000, "a message was leased twice or never"
    assert set(leased) == expected
    assert queue.count() == 0
    assert sum(1 for out in outputs if out.read_text()) >= 2, "only one process got work"


@pytest.mark.slow  # a real process, killed
@pytest.mark.parametrize("policy", ["Abandon", "Retry"])
def test_sigkill_while_holding_leases_loses_nothing(
    db_url: str, make_queue: MakeQueue, policy: str
) -> None:
    queue = make_queue(on_lease_expired=policy, max_attempts=3)
    queue.enqueue_many([NewMessage(message={"n": n}) for n in range(10)])
    holder = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.lifecycle_client",
            "hold",
            db_url,
            "orders",
            "6",
            "1.0",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    held = [int(i) for i in holder.stdout.readline().split()]
    assert len(held) == 6
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    expected = "Abandoned" if policy == "Abandon" else "Pending"
    wait_until(lambda: queue.sweep() and all(queue.get(i).status == expected for i in held), 30)
    assert queue.count() == 10
    others = [m.id for m in queue.lease("w2", 100).messages]
    assert len(others) == (10 if policy == "Retry" else 4)


def test_release_untracked_gives_back_only_this_processs_unknown_leases(
    make_queue: MakeQueue,
) -> None:
    """A worker whose lease answer was lost gives back, as `release` does, the rows it leased
    since it started and does not know of; an earlier incarnation's leases under the same owner,
    the rows it knows of and another owner's stay leased."""
    queue = make_queue(lease_seconds=600)
    queue.enqueue_many([NewMessage(message={"n": n}) for n in range(10)])
    earlier = [m.id for m in queue.lease("w1", 2).messages]  # a crashed process, same owner
    earlier_start = queue.get(earlier[0]).started_at
    assert earlier_start is not None
    # The new process starts later by the database clock, also at whole seconds (MariaDB over
    # ODBC stores them so): wait for that, with a deadline.
    wait_until(lambda: queue.clock() >= earlier_start + timedelta(seconds=1))
    since = queue.clock()
    others = [m.id for m in queue.lease("w2", 2).messages]
    mine = [m.id for m in queue.lease("w1", 5).messages]
    tracked, released_normally, unknown = mine[:2], mine[2], mine[3:]
    assert queue.release("w1", [released_normally]) == 1

    assert queue.release_untracked("w1", tracked, since) == 2
    assert queue.release_untracked("w1", tracked, since) == 0

    def state(message_id: int) -> tuple[object, ...]:
        m = queue.get(message_id)
        return (m.status, m.attempts, m.lease_expires_at, m.lease_owner, m.version)

    assert [state(i) for i in unknown] == [state(released_normally)] * 2
    assert state(unknown[0])[:3] == ("Pending", 0, None)
    for message_id in earlier + tracked:
        assert (queue.get(message_id).status, queue.get(message_id).lease_owner) == ("Leased", "w1")
    assert {queue.get(i).lease_owner for i in others} == {"w2"}
    assert {queue.get(i).status for i in others} == {"Leased"}
    # Nothing tracked: every lease of the owner since then goes back.
    assert queue.release_untracked("w2", [], since) == 2
    assert {queue.get(i).status for i in others} == {"Pending"}
    assert set(unknown) <= {m.id for m in queue.lease("w3", 10).messages}  # due again
