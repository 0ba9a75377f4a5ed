"""Leasing through a queue's flow controls: a pause, a global concurrency and a rate limit
(`storage/flow_control.py`).

A queue without limits leases in one statement, as ever: the statement itself refuses while the
queue is paused or has a limit (`Queries.flow_gate`), so a handle that does not know of a new
limit or pause cannot lease past it. Only when that statement returns nothing does the handle
read the queue's pause and limits (one more statement, on the idle path).

A queue with a global concurrency leases in its registry row's turn: lock the row, count the
Leased messages (a new statement, so it sees every lease committed before the lock was granted),
lease at most the difference. At no instant are more messages Leased than the limit: a lease
that lapsed stays Leased, and counted, until the sweep settles it.

A queue with ordered groups (`spec.groups`, copied to its registry row) leases in the same
row's turn, through a statement that takes a message of a group key only while fewer than the
group's concurrency of its key are Leased or ahead of it (lower id) and waiting
(`Queries.group_gate`). Leases of the queue take turns, and each statement sees every lease
committed before it: the count per key can never exceed the limit. An enqueue that commits
after a message of its key with a higher id was leased (ids are taken before commit) runs
after that message, never beside more than the limit.

A rate-limited queue leases in its bucket's turn: lock the bucket (database clock), lease at most
the whole tokens it holds, record what was taken. Over any interval of the database clock, the
leases of all workers together (timed by `started_at`) number at most
`burst + messagesPerSecond * seconds` (GCRA, kept as the bucket's theoretical arrival time).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from ..dialects import GroupLease, LeasedRows, LeaseRequest
from ..storage.flow_control import flow_state
from .context import QueueContext

EPSILON = 1e-9
"""Tokens lost to floating point: 2.9999999999 tokens are 3."""


@dataclass(frozen=True)
class Leased:
    rows: LeasedRows
    paused: bool = False
    throttled_for: float | None = None
    at_concurrency_limit: bool = False
    """The global concurrency is reached: nothing leased until a Leased message settles."""


def lease_rows(
    queue: QueueContext,
    connection: Connection,
    *,
    owner: str,
    batch_size: int,
    lease_seconds: float,
    correlation_id: str,
) -> Leased:
    """Up to `batch_size` due messages, as the queue's pause, global concurrency and rate
    limit allow."""
    memory = queue.flow
    request = LeaseRequest(queue.name, owner, batch_size, lease_seconds, correlation_id)
    if not memory.controlled:
        leased = _lease_uncontrolled(queue, connection, request)
        if leased is not None:
            return leased
    if memory.state.concurrency_limited or memory.state.grouped:
        gate = connection.execute(queue.queries.lock_concurrency(), {"b_queue": queue.name}).first()
        if gate is None or gate.paused_at is not None:
            return Leased([], paused=gate is not None)
        memory.remember(
            replace(memory.state, max_leased=gate.max_leased, group_limit=gate.group_limit)
        )
        if not (
            memory.state.concurrency_limited or memory.state.grouped
        ):  # the limit and groups were lifted
            return lease_rows(
                queue,
                connection,
                owner=owner,
                batch_size=batch_size,
                lease_seconds=lease_seconds,
                correlation_id=correlation_id,
            )
        if memory.state.grouped:
            request = replace(request, group=GroupLease(gate.group_limit, bool(gate.group_hold)))
        if memory.state.concurrency_limited:
            counted = connection.execute(queue.queries.count_leased()).scalar_one()
            room = gate.max_leased - counted
            if room < 1:
                return Leased([], at_concurrency_limit=True)
            request = replace(request, batch_size=min(batch_size, room), concurrency_limited=True)
    if not memory.state.rate_limited:
        rows = queue.dialect.lease(connection, queue.queries, request)
        return Leased(rows) if rows else _nothing_leased(queue, connection)
    return _lease_in_bucket_turn(queue, connection, replace(request, rate_limited=True))


def lease_in_autocommit(
    queue: QueueContext,
    connection: Connection,
    *,
    owner: str,
    batch_size: int,
    lease_seconds: float,
    correlation_id: str,
) -> Leased | None:
    """`lease_rows` on a connection in autocommit, for a queue this handle believes has no
    flow controls: its one statement. None when the queue turns out to have some (their row
    locks need a transaction: lease again in one)."""
    request = LeaseRequest(queue.name, owner, batch_size, lease_seconds, correlation_id)
    return None if queue.flow.controlled else _lease_uncontrolled(queue, connection, request)


def _lease_uncontrolled(
    queue: QueueContext, connection: Connection, request: LeaseRequest
) -> Leased | None:
    """The one statement of a queue without flow controls; it leases nothing while the queue
    is paused or has a limit (`Queries.flow_gate`). After an empty lease, the queue's pause
    and limits are read: None when it has limits (remembered: lease through them)."""
    rows = queue.dialect.lease(connection, queue.queries, request)
    if rows:
        return Leased(rows)
    state = flow_state(queue.storage, connection, queue.name)
    if state is None or not state.controlled:
        return Leased(rows, paused=state is not None and state.paused)
    queue.flow.remember(state)
    return None


def _lease_in_bucket_turn(
    queue: QueueContext, connection: Connection, request: LeaseRequest
) -> Leased:
    """Lease as the rate limit's bucket allows (at most `request.batch_size`)."""
    bucket = connection.execute(queue.queries.lock_bucket(), {"b_queue": queue.name}).first()
    if bucket is None:  # the limit was lifted
        queue.flow.remember(replace(queue.flow.state, messages_per_second=None, burst=None))
        return lease_rows(
            queue,
            connection,
            owner=request.owner,
            batch_size=request.batch_size,
            lease_seconds=request.lease_seconds,
            correlation_id=request.correlation_id,
        )
    rate, burst, arrival = bucket.messages_per_second, bucket.burst, bucket.theoretical_arrival
    now = _seconds(bucket.now)
    tokens = min(float(burst), (now - arrival) * rate)
    allowed = min(request.batch_size, math.floor(tokens + EPSILON))
    if allowed < 1:
        return Leased([], throttled_for=(1 - tokens) / rate)
    rows = queue.dialect.lease(connection, queue.queries, replace(request, batch_size=allowed))
    if not rows:
        return _nothing_leased(queue, connection)
    # Timed by the leases' own clock (`started_at`, never before `now`): the bound holds in the
    # time the rows record.
    started = max(now, _seconds(_started_at(queue, rows[0])))
    arrival = max(arrival, started - burst / rate) + len(rows) / rate
    connection.execute(queue.queries.take_tokens(), {"b_queue": queue.name, "b_arrival": arrival})
    throttled = None
    if allowed < request.batch_size and len(rows) == allowed:
        throttled = max(0.0, arrival + 1 / rate - started)
    return Leased(rows, throttled_for=throttled)


def _nothing_leased(queue: QueueContext, connection: Connection) -> Leased:
    """After a lease that found nothing: whether the queue is paused, and the limits this
    handle leases through from its next lease on (one added since it last looked shut the
    statement's gate)."""
    state = flow_state(queue.storage, connection, queue.name)
    if state is None:
        return Leased([])
    queue.flow.remember(state)
    return Leased([], paused=state.paused)


def _started_at(queue: QueueContext, row: Sequence[Any]) -> datetime:
    value = row[queue.table.c.keys().index("started_at")]
    assert isinstance(value, datetime)
    return value


def _seconds(moment: datetime) -> float:
    assert moment.tzinfo is not None
    return moment.timestamp()
