"""Lost lease answers: a lease statement that failed with a database error may have committed
(the connection dropped while it did), leaving rows Leased by this worker that it never heard of.
Nobody would start them, and once their lease expired the sweep would abandon them (the default
onLeaseExpired) or count an attempt that never ran.

So after such a failure, once the database answers again and before the next lease, the worker
gives back (as a SIGTERM release does: Pending, the attempt not counted) every row Leased under
its owner that it does not track: messages waiting or running (`held`), outcomes not recorded
yet (`settling`, waiting or being recorded: releasing those would run them twice) and outcomes
it could not record at all (left to their lease's expiry, their handlers ran). Nothing else of
the worker holds a lease: only the lease loop leases, and it is the one recovering.

Rows leased by an earlier process under the same (stable, `--owner`) name are never given back:
only rows whose `started_at` (every lease sets it to the database's now) is not before this
process's own start, read from the database clock before its first lease. A crashed earlier
process may have started those (Abandon exists for that). Where an engine stores whole seconds
(MariaDB over ODBC), a lease of an earlier process within the very second this one started
would count as this one's: a restart takes longer than that. Two live processes sharing an owner
are not supported anyway (each would extend and settle the other's leases).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

from tablequeue import Queue

from .held import HeldMessages
from .metrics import WorkerMetrics
from .settling import Settlement

log = logging.getLogger("tablequeue.worker")


class LostLeases:
    """Whether a lease answer may have been lost, and giving back what it leased."""

    def __init__(
        self,
        queue: Queue,
        owner: str,
        started: datetime,
        held: HeldMessages,
        settlement: Settlement,
        metrics: WorkerMetrics,
    ) -> None:
        self.queue = queue
        self.owner = owner
        self.started = started
        """This process's start by the database clock, before its first lease."""
        self.held = held
        self.settlement = settlement
        self.metrics = metrics
        self.owed = False
        """A lease failed with a database error: it may have committed unheard."""

    async def give_back(self) -> None:
        """If owed: release the untracked leases (database errors propagate, still owed)."""
        if not self.owed:
            return
        # Taken right before the statement: only the lease loop leases, and it waits for this,
        # so no row becomes Leased by us meanwhile; tracked rows settled meanwhile are no
        # longer Leased.
        tracked = self.held.message_ids() + self.settlement.tracked_ids()
        released = await asyncio.to_thread(
            self.queue.release_untracked, self.owner, tracked, self.started
        )
        self.owed = False
        if released:
            self.metrics.count_released(released)
        log.info(
            "gave back messages a lost lease answer left leased",
            extra={"count": released},
        )
