"""Request and response bodies of the HTTP API (camelCase JSON, as in the Queue resource)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from tablequeue.models import Message, NewMessage

MAX_BATCH = 10_000


class Model(BaseModel):
    """A request body: unknown fields are mistakes."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Out(BaseModel):
    """A response body, built from the core's objects (which carry more than it shows)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class EnqueueResult(Out):
    id: int | None
    tracking_id: uuid.UUID | None
    message_id: str | None
    outcome: Literal["inserted", "updated", "discarded"]
    status: str | None
    version: int | None


class EnqueueResponse(Out):
    results: list[EnqueueResult]


EnqueueBody = NewMessage | list[NewMessage]


class MessageOut(Out):
    id: int
    message_id: str | None
    status: str
    priority: int
    message: Any
    previous_message: Any
    headers: dict[str, Any] | None
    version: int
    attempts: int
    process_after: datetime
    expires_at: datetime | None
    lease_expires_at: datetime | None
    lease_owner: str | None
    correlation_id: str | None
    tracking_id: uuid.UUID
    result: Any
    progress: Any
    last_error: str | None
    created_at: datetime
    updated_at: datetime
    processed_at: datetime | None

    @classmethod
    def of(cls, message: Message) -> MessageOut:
        return cls.model_validate(message.__dict__)


class MessagePage(Out):
    items: list[MessageOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page")


class MessagePatch(Model):
    message: Any = Field(None, description="A corrected body")
    status: str | None = None
    priority: int | None = Field(None, ge=-32768, le=32767)
    force: bool = Field(False, description="Also change a Leased message")


class SetStatusRequest(Model):
    status: str
    ids: list[int] | None = Field(None, max_length=MAX_BATCH)
    from_status: str | None = None
    where: str | None = Field(None, max_length=4000)
    force: bool = False
    dry_run: bool = Field(False, description="Only count the messages it would change")


class SetStatusResponse(Out):
    changed: int
    dry_run: bool


class DefaultStatusRequest(Model):
    status: str


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


class QueueDetail(QueueSummary):
    settings: dict[str, Any]


class Job(Out):
    queue: str
    id: int
    tracking_id: uuid.UUID
    status: str
    attempts: int
    result: Any
    progress: Any
    last_error: str | None
    processed_at: datetime | None


class ErrorBody(Out):
    error: str
    detail: list[str] = Field(default_factory=list)
