"""Request and response bodies of the HTTP API (camelCase JSON, as in the Queue resource).

A message's shape is not written out here: `MessageOut`, `Job` and `EnqueueResult` are built
from the fields of the core's `Message` and `Enqueued` dataclasses, so the API shows every field
the core stores, with its type.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.alias_generators import to_camel

from tablequeue.limits import ATTEMPTS_KEPT, MAX_PRIORITY
from tablequeue.models import Attempt, Enqueued, Message, NewMessage
from tablequeue.models import Delivery as CoreDelivery
from tablequeue.models import Job as CoreJob
from tablequeue.predicate import MAX_LENGTH as MAX_PREDICATE_LENGTH

from .limits import MAX_BATCH


class Model(BaseModel):
    """A request body: unknown fields are mistakes."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Out(BaseModel):
    """A response body, built from the core's objects (which carry more than it shows)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class FromCore(Out):
    """A response body whose fields are fields of one of the core's dataclasses."""

    @classmethod
    def of(cls, item: object, **extra: Any) -> Self:
        return cls.model_validate(vars(item) | extra)


def _from_core(
    name: str, source: type, fields: list[str] | None = None, **extra: Any
) -> type[FromCore]:
    """A response model: `extra` fields first, then `fields` of the dataclass `source` (all of
    them by default) with their types there, and their JSON key where the dataclass names one
    (`Message`'s correlation ids)."""
    types = get_type_hints(source)
    chosen = fields or [field.name for field in dataclasses.fields(source)]
    json_keys = {f.name: f.metadata.get("json_key") for f in dataclasses.fields(source)}
    definitions: dict[str, Any] = extra | {
        field: (types[field], Field(alias=json_keys[field]) if json_keys[field] else ...)
        for field in chosen
    }
    return create_model(name, __base__=FromCore, **definitions)


if TYPE_CHECKING:  # mypy cannot see the fields of a model built at runtime
    MessageOut = FromCore
    Job = FromCore
    EnqueueResult = FromCore
    AttemptOut = FromCore
    Delivery = FromCore
    FoundMessage = FromCore
else:
    MessageOut = _from_core("MessageOut", Message)
    Job = _from_core("Job", CoreJob)
    EnqueueResult = _from_core("EnqueueResult", Enqueued)
    AttemptOut = _from_core("AttemptOut", Attempt)
    Delivery = _from_core("Delivery", CoreDelivery)
    FoundMessage = _from_core("FoundMessage", Message, queue=(str, ...), database=(str, ...))


class AttemptList(Out):
    items: list[AttemptOut] = Field(
        description=f"Failed and lost attempts, oldest first (the newest {ATTEMPTS_KEPT})"
    )


class EnqueueResponse(Out):
    results: list[EnqueueResult]


EnqueueBody = NewMessage | list[NewMessage]


class PublishResponse(Out):
    topic: str
    deliveries: list[Delivery] = Field(description="One per subscribed queue, by queue name")


class MessagePage(Out):
    items: list[MessageOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page")


class UnreachableDatabase(Out):
    database: str
    error: str = Field(description="Why it could not be read")


class FoundMessages(Out):
    items: list[FoundMessage] = Field(description="Each with the names of its queue and database")
    unreachable: list[UnreachableDatabase] = Field(
        default_factory=list, description="Databases that could not be searched"
    )


class DatabaseOut(Out):
    name: str = Field(description="What the `database` query parameter of the routes names")
    engine: str = Field(description="postgresql, mariadb, sqlite or mssql")
    default: bool = Field(description="Read by routes without `database`")


NEW_STATUS_FIELD_HINT = '"newStatus": true'
NEW_STATUS = Field(
    False,
    description="The status is new on purpose: write it though it is neither a built-in status, "
    "nor the queue's default, nor held by a message of the queue (without it such a status, "
    "often a typo, is refused with the known ones)",
)


class MessagePatch(Model):
    message: Any = Field(None, description="A corrected body")
    status: str | None = None
    priority: int | None = Field(None, ge=-MAX_PRIORITY - 1, le=MAX_PRIORITY)
    force: bool = Field(False, description="Also change a Leased message")
    new_status: bool = NEW_STATUS


class SetStatusRequest(Model):
    status: str
    ids: list[int] | None = Field(None, max_length=MAX_BATCH)
    from_status: str | None = None
    where: str | None = Field(None, max_length=MAX_PREDICATE_LENGTH)
    force: bool = False
    dry_run: bool = Field(False, description="Only count the messages it would change")
    new_status: bool = NEW_STATUS


class SetStatusResponse(Out):
    changed: int
    dry_run: bool


class SelectedMessages(Model):
    ids: list[int] = Field(min_length=1, max_length=MAX_BATCH, description="Message ids (`id`)")
    force: bool = Field(False, description="Also delete Leased messages (delete only)")


class DeletedResponse(Out):
    deleted: int = Field(description="How many were deleted (gone or Leased ones are not)")


class CancelledResponse(Out):
    cancelled: int = Field(description="How many were cancelled (finished ones are not)")


class DefaultStatusRequest(Model):
    status: str
    new_status: bool = NEW_STATUS


class RateLimitOut(Out):
    messages_per_second: float
    burst: int


class FlowResponse(Out):
    queue: str
    paused: bool
    paused_at: datetime | None = Field(None, description="Since when (database clock)")
    rate_limit: RateLimitOut | None = None
    global_concurrency: int | None = None


class QueueSummary(Out):
    name: str
    table: str
    category: str
    default_status: str
    counts: dict[str, int]
    backlog: int
    leased: int
    oldest_pending_seconds: float
    health: str
    health_reasons: list[str]
    approximate: list[str] = Field(
        default_factory=list, description="Statuses whose count is an estimate (very large ones)"
    )
    paused: bool = Field(False, description="Workers lease nothing (`POST .../resume`)")
    paused_at: datetime | None = None
    rate_limit: RateLimitOut | None = Field(None, description="From the Queue's spec.rateLimit")
    global_concurrency: int | None = Field(
        None, description="Most messages Leased at once (the Queue's spec.globalConcurrency)"
    )


class QueueDetail(QueueSummary):
    settings: dict[str, Any]


class WorkerOut(Out):
    """A worker process as its last heartbeat in `tablequeue_workers` shows it."""

    worker_id: str = Field(description="The worker's id, also its lease owner on messages")
    queue: str
    state: str = Field(description="live, or stale: no heartbeat for staleAfterSeconds")
    host: str = Field(description="The pod's name (POD_NAME), else the host name")
    pid: int
    version: str = Field(description="tablequeue version of the worker")
    started_at: str = Field(description="First heartbeat (database clock, ISO 8601)")
    last_seen: str = Field(description="Latest heartbeat (database clock, ISO 8601)")
    seconds_since_seen: float
    heartbeat_seconds: float = Field(description="The worker's heartbeat interval")
    stale_after_seconds: float
    in_flight: int = Field(description="Handlers running at the last heartbeat")
    processed: int = Field(description="Successes recorded since the worker started")
    failed: int = Field(description="Failures recorded since the worker started")


class WorkerList(Out):
    workers: list[WorkerOut]
    live: int
    stale: int


class WorkerCounts(Out):
    live: int
    stale: int


class QueueHealth(Out):
    queue: str
    health: str = Field(description="Healthy, Degraded, Unhealthy, Disabled; Unhealthy is a 503")
    reasons: list[str]
    backlog: int | None = None
    oldest_pending_seconds: float | None = None
    workers: WorkerCounts | None = Field(
        None, description="Heartbeating workers; null when tablequeue_workers cannot be read"
    )
