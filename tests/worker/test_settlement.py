"""The worker's settlement on its own: outcomes recorded with the next lease or by the settler,
put back when the database is away, isolated when one breaks the statement, none left behind at
shutdown. A stand-in queue records calls; the end-to-end behaviour is in the other test files."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any, cast

import pytest

from tablequeue.errors import DatabaseUnavailable
from tablequeue.models import Completion, Failure, LeaseBatch, Settled
from tablequeue.queue import Queue
from tablequeue.worker.database_health import DatabaseHealth
from tablequeue.worker.metrics import WorkerMetrics
from tablequeue.worker.settling import SETTLE_DELAY, Settlement

from .helpers import leased_message

QUEUE = "settlement-unit"


def completion(message_id: int) -> Completion:
    return Completion(leased_message(message_id))


class StandInQueue:
    """Records which outcomes each call (`lease` or `settle`) recorded; a call can find the
    database `down`, hold its transaction open until `gate` is set, or refuse a statement that
    contains a `broken` message."""

    def __init__(self) -> None:
        self.recorded: list[tuple[str, list[int]]] = []
        self.down: set[str] = set()
        self.broken: set[int] = set()
        self.gate = threading.Event()
        self.gate.set()

    def settle(self, owner: str, outcomes: Sequence[Completion | Failure]) -> Settled:
        return self._record("settle", outcomes)

    def settle_and_lease(
        self,
        owner: str,
        outcomes: Sequence[Completion | Failure],
        batch_size: int,
        lease_seconds: float | None = None,
    ) -> tuple[Settled, LeaseBatch]:
        self.gate.wait(timeout=10)
        return self._record("lease", outcomes), LeaseBatch("cid", owner, [])

    def _record(self, call: str, outcomes: Sequence[Completion | Failure]) -> Settled:
        ids = [outcome.message.id for outcome in outcomes]
        if call in self.down:
            raise DatabaseUnavailable("the database is away")
        if self.broken & set(ids):
            raise ValueError("no engine stores this")
        self.recorded.append((call, ids))
        return Settled(processed=len(ids))


def settlement_on(queue: StandInQueue) -> Settlement:
    return Settlement(cast(Queue, queue), "me", DatabaseHealth(QUEUE), WorkerMetrics(QUEUE))


async def eventually(condition: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


def test_the_next_lease_records_waiting_outcomes_in_its_transaction() -> None:
    async def scenario() -> None:
        queue = StandInQueue()
        settlement = settlement_on(queue)
        settlement.add(completion(1))
        settlement.add(completion(2))
        assert settlement.message_ids() == [1, 2]
        batch = await settlement.settle_and_lease(10, 30.0)
        assert batch is not None and batch.correlation_id == "cid"
        assert queue.recorded == [("lease", [1, 2])]
        assert len(settlement) == 0

    asyncio.run(scenario())


def test_the_settler_records_what_no_lease_took_within_the_delay() -> None:
    async def scenario() -> None:
        queue = StandInQueue()
        settlement = settlement_on(queue)
        settler = asyncio.create_task(settlement.flush_on_time(asyncio.Event()))
        added = time.monotonic()
        settlement.add(completion(1))
        await eventually(lambda: queue.recorded)
        assert time.monotonic() - added >= SETTLE_DELAY * 0.9  # it gave a lease the chance
        assert queue.recorded == [("settle", [1])]
        settlement.close()
        await asyncio.wait_for(settler, 5)

    asyncio.run(scenario())


def test_outcomes_of_a_failed_transaction_are_put_back_first_in_line() -> None:
    async def scenario() -> None:
        queue = StandInQueue()
        settlement = settlement_on(queue)
        settlement.add(completion(1))
        settlement.add(completion(2))
        queue.gate.clear()  # the transaction is under way while another handler finishes
        queue.down = {"lease"}
        lease = asyncio.create_task(settlement.settle_and_lease(10, 30.0))
        await eventually(lambda: len(settlement) == 0)
        settlement.add(completion(3))
        queue.gate.set()
        with pytest.raises(DatabaseUnavailable):
            await lease
        assert settlement.message_ids() == [1, 2, 3]
        queue.down = set()
        await settlement.settle_and_lease(10, 30.0)
        assert queue.recorded == [("lease", [1, 2, 3])]

    asyncio.run(scenario())


def test_an_outcome_that_breaks_the_statement_is_isolated_by_the_settler() -> None:
    async def scenario() -> None:
        queue = StandInQueue()
        queue.broken = {2}
        settlement = settlement_on(queue)
        for message_id in (1, 2, 3):
            settlement.add(completion(message_id))
        assert await settlement.settle_and_lease(10, 30.0) is None
        assert settlement.message_ids() == [1, 2, 3]
        # From now on the next lease leaves them to the settler, which records them one by one.
        assert await settlement.settle_and_lease(10, 30.0) is not None
        assert queue.recorded == [("lease", [])]
        settler = asyncio.create_task(settlement.flush_on_time(asyncio.Event()))
        await eventually(lambda: len(queue.recorded) == 3)
        assert queue.recorded[1:] == [("settle", [1]), ("settle", [3])]
        settlement.add(completion(4))  # the broken one is logged and left: leases record again
        await settlement.settle_and_lease(10, 30.0)
        assert queue.recorded[3:] == [("lease", [4])]
        settlement.close()
        await asyncio.wait_for(settler, 5)

    asyncio.run(scenario())


def test_after_close_the_settler_ends_once_the_transaction_in_flight_is_settled() -> None:
    async def scenario() -> None:
        queue = StandInQueue()
        settlement = settlement_on(queue)
        settlement.add(completion(1))
        queue.gate.clear()
        queue.down = {"lease"}  # the lease under way at shutdown fails: its outcomes come back
        lease = asyncio.create_task(settlement.settle_and_lease(10, 30.0))
        await eventually(lambda: len(settlement) == 0)
        stopping = asyncio.Event()
        stopping.set()
        settler = asyncio.create_task(settlement.flush_on_time(stopping))
        settlement.close()
        await asyncio.sleep(0.1)
        assert not settler.done(), "an outcome is still in flight"
        queue.gate.set()
        with pytest.raises(DatabaseUnavailable):
            await lease
        await asyncio.wait_for(settler, 5)
        assert queue.recorded == [("settle", [1])]

    asyncio.run(scenario())
