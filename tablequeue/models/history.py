"""What the core reports about what happened: a message's failed attempts and kept final outcome
(`Attempt`, `StoredResult`), a message found by its tracking id (`Job`), the audit trail's
entries (`AuditEntry`), and a queue's schedules (`ScheduleView`, and `Fired`: what one claim
of a tick did)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from .messages import Delivery, Enqueued, Message


@dataclass(frozen=True)
class Attempt:
    """One failed or lost attempt of a message, as recorded."""

    attempt: int
    kind: str
    """`failure` (the handler failed) or `lease-expired` (the sweep settled a lapsed lease)."""
    at: datetime
    owner: str | None
    correlation_id: str | None = field(metadata={"json_key": "leaseBatchId"})
    """The lease batch of the attempt (`leaseBatchId` in JSON, as a message shows it)."""
    error: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "kind": self.kind,
            "at": self.at.isoformat(),
            "owner": self.owner,
            "leaseBatchId": self.correlation_id,
            "error": self.error,
        }


@dataclass(frozen=True)
class StoredResult:
    """The final outcome of a finished message, kept in `tablequeue_results`."""

    queue: str
    tracking_id: uuid.UUID
    id: int
    message_id: str | None
    status: str
    result: Any
    last_error: str | None
    attempts: int
    processed_at: datetime


@dataclass(frozen=True)
class Job:
    """A message by its tracking id: from its row while it has one (`source` "queue"), else
    from its kept outcome (`source` "results": no progress, the final status)."""

    queue: str
    source: Literal["queue", "results"]
    id: int
    tracking_id: uuid.UUID
    message_id: str | None
    status: str
    attempts: int
    result: Any
    progress: Any
    last_error: str | None
    processed_at: datetime | None

    @classmethod
    def of_message(cls, queue: str, m: Message) -> Job:
        return cls(
            queue,
            "queue",
            m.id,
            m.tracking_id,
            m.message_id,
            m.status,
            m.attempts,
            m.result,
            m.progress,
            m.last_error,
            m.processed_at,
        )

    @classmethod
    def of_result(cls, r: StoredResult) -> Job:
        return cls(
            r.queue,
            "results",
            r.id,
            r.tracking_id,
            r.message_id,
            r.status,
            r.attempts,
            r.result,
            None,
            r.last_error,
            r.processed_at,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "source": self.source,
            "id": self.id,
            "trackingId": str(self.tracking_id),
            "messageId": self.message_id,
            "status": self.status,
            "attempts": self.attempts,
            "result": self.result,
            "progress": self.progress,
            "lastError": self.last_error,
            "processedAt": None if self.processed_at is None else self.processed_at.isoformat(),
        }


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: datetime
    who: str
    via: str
    address: str | None
    action: str
    queue: str | None
    target: dict[str, Any] | None
    rows: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at.isoformat(),
            "who": self.who,
            "via": self.via,
            "address": self.address,
            "action": self.action,
            "queue": self.queue,
            "target": self.target,
            "rows": self.rows,
        }


@dataclass(frozen=True)
class Fired:
    """What one claim did: the tick it enqueued (None when the due ticks were skipped), how
    many ticks were due, the message and the schedule's next tick."""

    schedule: str
    tick: datetime | None
    due: int
    message: Enqueued | None
    """What the tick enqueued into the queue (None when it was skipped or went to a topic)."""
    next_tick: datetime
    topic: str | None = None
    deliveries: tuple[Delivery, ...] = ()
    """A schedule with a topic: what publishing the tick's message did in each subscriber."""


@dataclass(frozen=True)
class ScheduleView:
    """A declared schedule with its stored state, as the API, UI and CLI show it."""

    name: str
    cron: str
    time_zone: str
    missed: str
    suspend: bool
    message_id: str | None
    """The messageId pattern."""
    topic: str | None
    """Where its ticks' messages are published, if not into the queue."""
    next_tick: datetime | None
    last_tick: datetime | None
    last_fired_at: datetime | None
    last_message: int | None
    fired: int
    skipped: int
