"""The worker's share of the chart rollup (`tablequeue.rollup`): counts kept in memory per
minute of the database's clock, written with one upsert per minute every `rollup_interval`
seconds (and at shutdown), together with samples of the queue's highest id and backlog. A
message leased for the first time counts as enqueued in the minute it was created (leases are
exclusive: one worker counts it).

Nothing is written per message: recording an outcome costs a dictionary lookup and a bucket
index. A worker killed with SIGKILL loses what it counted since its last write (at most
`rollup_interval` seconds); a write that fails is retried with the next one, its counts kept
(the last hour of them). The rollup never decides the worker's readiness.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

from tablequeue import Database, Queue
from tablequeue.models import Completion, Failure, Message, Settled
from tablequeue.rollup import MinuteCounts, minute_of, prune, write_minutes

from .database_health import DATABASE_ERRORS
from .now_and_then import NowAndThen
from .waiting import sleep_unless

log = logging.getLogger("tablequeue.worker")
PRUNE_EVERY = 600.0
"""Seconds between two deletions of rows past the horizon by one worker."""
KEPT_MINUTES = 60
"""Minutes of counts kept while writes fail (a missing table or grant, a database away)."""
ONE_MINUTE = timedelta(minutes=1)


class Rollup:
    """Counts of one worker for the rollup, per minute of the database's clock."""

    def __init__(self, database: Database, queue: Queue, interval: float) -> None:
        self.database = database
        self.queue = queue
        self.interval = interval
        self.minutes: dict[datetime, MinuteCounts] = {}
        self._clock_offset = timedelta(0)
        """The database's clock minus this machine's, measured at each write."""
        self._first_leases: dict[int, datetime] = {}
        """Messages counted as enqueued at their lease, until settled: by id, their minute."""
        self._pruned_at: float | None = None
        self._cannot_write = NowAndThen(
            "cannot write the chart rollup; counts are kept and written later"
        )

    @property
    def enabled(self) -> bool:
        return self.interval > 0

    def database_now(self) -> datetime:
        return datetime.now(UTC) + self._clock_offset

    def _current(self) -> tuple[datetime, MinuteCounts]:
        now = self.database_now()
        return now, self._counts(minute_of(now))

    def _counts(self, minute: datetime) -> MinuteCounts:
        counts = self.minutes.get(minute)
        if counts is None:
            counts = self.minutes[minute] = MinuteCounts()
        return counts

    def leased(self, messages: Sequence[Message]) -> None:
        """Messages leased: the ones leased for the first time count as enqueued in the minute
        they were created (the queue table counts those never leased when the chart is read)."""
        if not self.enabled:
            return
        counts: MinuteCounts | None = None
        minute = end = datetime.min  # the message before's minute, and the next minute's start
        for message in messages:
            if _first_lease(message):
                created = message.created_at
                if counts is None or not minute <= created < end:
                    minute = minute_of(created)  # a batch's messages share a few minutes
                    end, counts = minute + ONE_MINUTE, self._counts(minute)
                counts.enqueued += 1
                self._first_leases[message.id] = minute

    def given_back(self, ids: Iterable[int]) -> None:
        """Leases given back unstarted: their next lease is their first again."""
        for message_id in ids:
            minute = self._first_leases.pop(message_id, None)
            if minute is not None:
                self._counts(minute).enqueued -= 1

    def settled(self, settled: Settled, outcomes: Sequence[Completion | Failure]) -> None:
        """Outcomes just recorded: successes with their latency (due to now), failures."""
        if not self.enabled:
            return
        for outcome in outcomes:
            self._first_leases.pop(outcome.message.id, None)
        now, counts = self._current()
        counts.processed += settled.processed + settled.deleted + settled.rescheduled
        counts.failed += settled.retrying + settled.errored
        counts.observe_many(
            [
                (now - outcome.message.process_after).total_seconds()
                for outcome in outcomes
                if isinstance(outcome, Completion)
            ]
        )

    async def write_every(self, stopping: asyncio.Event) -> None:
        """Write every `interval` until stopping (the worker wrote its first samples before
        it leased anything, and writes the last counts after its last outcome)."""
        while not stopping.is_set():
            await sleep_unless(self.interval, stopping)
            if not stopping.is_set():
                await self.write()

    async def write(self) -> None:
        """Write what was counted; on a database error keep it for the next write."""
        if not self.enabled:
            return
        taken, self.minutes = self.minutes, {}
        try:
            asked = time.time()
            clock = await asyncio.to_thread(
                write_minutes, self.database, self.queue.name, self.queue.table, taken
            )
        except DATABASE_ERRORS as error:
            self._keep(taken)
            self._cannot_write.warn(error)
            return
        answered = time.time()
        local = datetime.fromtimestamp((asked + answered) / 2, UTC)
        self._clock_offset = clock - local
        if self._pruned_at is None or answered - self._pruned_at >= PRUNE_EVERY:
            self._pruned_at = answered
            try:  # the counts are written (committed): a failed prune must not keep them
                deleted = await asyncio.to_thread(prune, self.database)
            except DATABASE_ERRORS as error:
                self._cannot_write.warn(error)
                return
            if deleted:
                log.info("pruned the chart rollup", extra={"count": deleted})

    def _keep(self, taken: dict[datetime, MinuteCounts]) -> None:
        """Counts a failed write took: back, for the next write (the last KEPT_MINUTES)."""
        for minute, counts in taken.items():
            self.minutes.setdefault(minute, MinuteCounts()).merge(counts)
        for minute in sorted(self.minutes)[:-KEPT_MINUTES]:
            del self.minutes[minute]


def _first_lease(message: Message) -> bool:
    """Whether a message just leased was never leased before: its first attempt, never
    finished (a message run again by `processAgainAt` was), never failed (a person may have
    retried a failed one: attempts start again at 0, its error stays)."""
    return message.attempts == 1 and message.processed_at is None and message.last_error is None
