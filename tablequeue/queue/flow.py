"""Leasing through a queue's flow controls: a pause and a rate limit (`storage/flow_control.py`).

A queue without a rate limit leases in one statement, as ever: the statement itself refuses
while the queue is paused or has a rate limit (`Queries.flow_gate`), so a handle that does not
know of a new limit or pause cannot lease past it. Only when that statement returns nothing does
the handle read the queue's pause and limit (one more statement, on the idle path).

A rate-limited queue leases in its bucket's turn: lock the bucket (database clock), lease at most
the whole tokens it holds, record what was taken. Over any interval of the database clock, the
leases of all workers together (timed by `started_at`) number at most
`burst + messagesPerSecond * seconds` (GCRA, kept as the bucket's theoretical arrival time).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from ..dialects import LeasedRows, LeaseRequest
from ..storage.flow_control import flow_state
from .context import QueueContext

EPSILON = 1e-9
"""Tokens lost to floating point: 2.9999999999 tokens are 3."""


@dataclass(frozen=True)
class Leased:
    rows: LeasedRows
    paused: bool = False
    throttled_for: float | None = None


def lease_rows(
    queue: QueueContext,
    connection: Connection,
    *,
    owner: str,
    batch_size: int,
    lease_seconds: float,
    correlation_id: str,
) -> Leased:
    """Up to `batch_size` due messages, as the queue's pause and rate limit allow."""

    def take(n: int, limited: bool) -> LeasedRows:
        request = LeaseRequest(queue.name, owner, n, lease_seconds, correlation_id, limited)
        return queue.dialect.lease(connection, queue.queries, request)

    if not queue.flow.limited:
        rows = take(batch_size, False)
        if rows:
            return Leased(rows)
        state = flow_state(queue.storage, connection, queue.name)
        if state is None or not state.limited:
            return Leased(rows, paused=state is not None and state.paused)
        queue.flow.limited = True
    bucket = connection.execute(queue.queries.lock_bucket(), {"b_queue": queue.name}).first()
    if bucket is None:  # the limit was lifted
        queue.flow.limited = False
        return lease_rows(
            queue,
            connection,
            owner=owner,
            batch_size=batch_size,
            lease_seconds=lease_seconds,
            correlation_id=correlation_id,
        )
    rate, burst, arrival = bucket.messages_per_second, bucket.burst, bucket.theoretical_arrival
    now = _seconds(bucket.now)
    tokens = min(float(burst), (now - arrival) * rate)
    allowed = min(batch_size, math.floor(tokens + EPSILON))
    if allowed < 1:
        return Leased([], throttled_for=(1 - tokens) / rate)
    rows = take(allowed, True)
    if not rows:
        state = flow_state(queue.storage, connection, queue.name)
        return Leased(rows, paused=state is not None and state.paused)
    # Timed by the leases' own clock (`started_at`, never before `now`): the bound holds in the
    # time the rows record.
    started = max(now, _seconds(_started_at(queue, rows[0])))
    arrival = max(arrival, started - burst / rate) + len(rows) / rate
    connection.execute(queue.queries.take_tokens(), {"b_queue": queue.name, "b_arrival": arrival})
    throttled = None
    if allowed < batch_size and len(rows) == allowed:
        throttled = max(0.0, arrival + 1 / rate - started)
    return Leased(rows, throttled_for=throttled)


def _started_at(queue: QueueContext, row: Sequence[Any]) -> datetime:
    value = row[queue.table.c.keys().index("started_at")]
    assert isinstance(value, datetime)
    return value


def _seconds(moment: datetime) -> float:
    assert moment.tzinfo is not None
    return moment.timestamp()
