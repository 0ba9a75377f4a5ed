"""What the core reports about a queue's and its workers' state: what holds a queue's leases back
(`FlowState`), a worker's heartbeat and how the database last saw it (`Heartbeat`,
`WorkerInfo`), and a topic subscription (`TopicSubscription`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from typing_extensions import deprecated

from .. import names
from ..errors import InvalidInput
from ..limits import WORKER_ID_LENGTH


@dataclass(frozen=True)
class FlowState:
    """What holds a queue's leases back: a pause (since when), a rate limit and a global
    concurrency (the most messages Leased at once)."""

    paused_at: datetime | None
    messages_per_second: float | None
    burst: int | None
    max_leased: int | None = None
    group_limit: int | None = None
    """spec.groups' concurrency: the most messages of one group key Leased at once."""

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    @property
    def rate_limited(self) -> bool:
        """spec.rateLimit is set."""
        return self.messages_per_second is not None

    @property
    def concurrency_limited(self) -> bool:
        """spec.globalConcurrency is set."""
        return self.max_leased is not None

    @property
    def grouped(self) -> bool:
        return self.group_limit is not None

    @property
    def controlled(self) -> bool:
        """A lease of the queue locks a registry or bucket row first (a transaction's work)."""
        return self.rate_limited or self.concurrency_limited or self.grouped

    @property
    @deprecated("FlowState.limited is deprecated: use rate_limited")
    def limited(self) -> bool:
        """Deprecated (to be removed in the release after next): `rate_limited`."""
        return self.rate_limited

    @property
    @deprecated("FlowState.capped is deprecated: use concurrency_limited")
    def capped(self) -> bool:
        """Deprecated (to be removed in the release after next): `concurrency_limited`."""
        return self.concurrency_limited


DEFAULT_HEARTBEAT_SECONDS = 5.0
STALE_AFTER_BEATS = 3
MIN_STALE_SECONDS = 10.0

WorkerState = Literal["live", "stale"]


def stale_after(heartbeat_seconds: float) -> float:
    """Seconds without a beat after which a worker is shown as stale."""
    return max(STALE_AFTER_BEATS * heartbeat_seconds, MIN_STALE_SECONDS)


@dataclass(frozen=True)
class Heartbeat:
    """What a worker reports about itself on each beat."""

    worker_id: str
    queue: str
    host: str
    pid: int
    version: str
    heartbeat_seconds: float
    in_flight: int = 0
    processed: int = 0
    """Messages whose success was recorded since the worker started."""
    failed: int = 0
    """Messages whose failure was recorded since the worker started (retrying or Error)."""

    def checked(self) -> Heartbeat:
        if not 1 <= len(self.worker_id) <= WORKER_ID_LENGTH:
            raise InvalidInput(f"a worker id has 1 to {WORKER_ID_LENGTH} characters")
        names.queue_name(self.queue)
        if not 0 < self.heartbeat_seconds <= 3600:
            raise InvalidInput("heartbeat_seconds must be above 0 and at most 3600")
        return self


@dataclass(frozen=True)
class WorkerInfo:
    """A worker as the database last heard from it."""

    worker_id: str
    queue: str
    host: str
    pid: int
    version: str
    heartbeat_seconds: float
    started_at: datetime
    last_seen: datetime
    seconds_since_seen: float
    in_flight: int
    processed: int
    failed: int

    @property
    def up_seconds(self) -> float:
        """Seconds since the first heartbeat (database clock); a stale worker's ends at its
        last heartbeat."""
        known = (self.last_seen - self.started_at).total_seconds()
        return max(known + (self.seconds_since_seen if self.state == "live" else 0.0), 0.0)

    @property
    def stale_after_seconds(self) -> float:
        return stale_after(self.heartbeat_seconds)

    @property
    def state(self) -> WorkerState:
        return "stale" if self.seconds_since_seen > self.stale_after_seconds else "live"

    def to_json(self) -> dict[str, Any]:
        return {
            "workerId": self.worker_id,
            "queue": self.queue,
            "state": self.state,
            "host": self.host,
            "pid": self.pid,
            "version": self.version,
            "startedAt": self.started_at.isoformat(),
            "lastSeen": self.last_seen.isoformat(),
            "secondsSinceSeen": round(self.seconds_since_seen, 3),
            "heartbeatSeconds": self.heartbeat_seconds,
            "staleAfterSeconds": self.stale_after_seconds,
            "inFlight": self.in_flight,
            "processed": self.processed,
            "failed": self.failed,
        }


@dataclass(frozen=True)
class TopicSubscription:
    """One queue's subscription to one topic: from its spec or made at runtime."""

    topic: str
    queue: str
    where: str | None
    origin: str
    """"spec" (`spec.subscriptions`) or "runtime" (`Database.subscribe`)."""
    expires_at: datetime | None
    """When a runtime subscription ends (None: never; always None for the spec's)."""
