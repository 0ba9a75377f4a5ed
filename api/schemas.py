"""Request and response bodies of the HTTP API (camelCase JSON, as in the Queue resource).

A message's shape is not written out here: `MessageOut` and `Job` are built from the fields of
the core's `Message` dataclass, so the API shows every field the core stores, with its type.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import TYPE_CHECKING, Any, Literal, Self, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.alias_generators import to_camel

from tablequeue.models import MAX_PRIORITY, Message, NewMessage
from tablequeue.predicate import MAX_LENGTH as MAX_PREDICATE_LENGTH

from .limits import MAX_BATCH


class Model(BaseModel):
    """A request body: unknown fields are mistakes."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Out(BaseModel):
    """A response body, built from the core's objects (which carry more than it shows)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class FromMessage(Out):
    """A response body whose fields are fields of the core's `Message`."""

    @classmethod
    def of(cls, message: Message, **extra: Any) -> Self:
        return cls.model_validate(message.__dict__ | extra)


_MESSAGE_TYPES: dict[str, Any] = get_type_hints(Message)
MESSAGE_FIELDS = [field.name for field in dataclasses.fields(Message)]
JOB_FIELDS = [
    "id",
    "tracking_id",
    "status",
    "attempts",
    "result",
    "progress",
    "last_error",
    "processed_at",
]


def _from_message(name: str, fields: list[str], **extra: Any) -> type[FromMessage]:
    """A response model with `extra` fields first, then `fields` typed as in `Message`."""
    definitions: dict[str, Any] = extra | {field: (_MESSAGE_TYPES[field], ...) for field in fields}
    return create_model(name, __base__=FromMessage, **definitions)


if TYPE_CHECKING:  # mypy cannot see the fields of a model built at runtime
    MessageOut = FromMessage
    Job = FromMessage
else:
    MessageOut = _from_message("MessageOut", MESSAGE_FIELDS)
    Job = _from_message("Job", JOB_FIELDS, queue=(str, ...))


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


class MessagePage(Out):
    items: list[MessageOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page")


class MessagePatch(Model):
    message: Any = Field(None, description="A corrected body")
    status: str | None = None
    priority: int | None = Field(None, ge=-MAX_PRIORITY - 1, le=MAX_PRIORITY)
    force: bool = Field(False, description="Also change a Leased message")


class SetStatusRequest(Model):
    status: str
    ids: list[int] | None = Field(None, max_length=MAX_BATCH)
    from_status: str | None = None
    where: str | None = Field(None, max_length=MAX_PREDICATE_LENGTH)
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
