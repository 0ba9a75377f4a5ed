"""What goes in and comes out of a queue: new messages, stored messages, outcomes, stats."""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, Literal

import orjson
import sqlalchemy as sa
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel
from typing_extensions import deprecated

from .. import names
from ..errors import InvalidInput
from ..limits import (
    MAX_CORRELATION_ID_LENGTH,
    MAX_GROUP_KEY_LENGTH,
    MAX_JSON_DEPTH,
    MAX_LABEL_LENGTH,
    MAX_MESSAGE_ID_LENGTH,
    MAX_PRIORITY,
    MAX_SECONDS,
)
from ..sqltypes import UtcDateTime


def canonical_json(value: Any) -> str:
    """The JSON text tablequeue stores: sorted keys, no spaces, so equal values compare equal;
    text as written (UTF-8, `Müller`, not `M\\u00fcller`), so a plain SELECT shows it. Only what
    JSON must escape is escaped (quotes, backslashes, control characters).

    SQLite before 3.45 and MariaDB's JSON_EXTRACT match path keys against the raw stored text:
    the dialects write path keys the same way (`dialects.types.path_text`)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19


def loads_json(text: str | bytes) -> Any:
    """JSON read back from the database as Python values, as `json.loads` reads it, in half
    its CPU on a message body (1.5 µs against 3.1; a worker decodes every body it leases):
    by orjson, unless the text has a run of 19 digits (orjson reads an integer beyond 64 bits
    as a float) or orjson refuses it (lone surrogates, numbers beyond a float's range), then by
    `json`.
    The digits are found by one translate and one substring search (a regular expression
    costs more than orjson's whole parse)."""
    if isinstance(text, str):
        raw = text.encode("utf-8", "surrogatepass")
    elif isinstance(text, bytes | bytearray):
        raw = bytes(text)
    else:  # TypeError, as json's: SQLAlchemy's SQLite JSON type relies on it for numbers
        return json.loads(text)
    if _LONG_DIGITS not in raw.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def escaped_json(value: Any) -> str:
    """The JSON text tablequeue wrote into tables of schema version 4 and older on engines that
    store JSON as text (`canonical_json` with every non-ASCII character escaped): what such rows
    hold until `apply` rewrites them (`storage.readable_json`)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def check_json(value: Any) -> None:
    """Raise InvalidInput (a ValueError) for JSON that some engine cannot store or the API
    cannot return: NaN/Infinity, NUL characters, unpaired surrogates, very deep nesting."""
    try:
        text = _CHECKING.encode(value)
    except RecursionError:
        raise InvalidInput(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    except (TypeError, ValueError) as error:
        raise InvalidInput(f"not JSON-serializable: {error}") from None
    check_text(text)  # surrogates; a NUL in any string is escaped in the text:
    if "\\u0000" in text and _ESCAPED_NUL.search(text):  # the regex only where it may match
        raise InvalidInput("strings may not contain NUL (\\u0000)")
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth(value) > MAX_JSON_DEPTH:
        raise InvalidInput(f"nested more than {MAX_JSON_DEPTH} levels deep")


_CHECKING = json.JSONEncoder(ensure_ascii=False, allow_nan=False, sort_keys=True)
"""`json.dumps` with these options, made once (json.dumps makes an encoder per call)."""

_ESCAPED_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
"""`\\u0000` in JSON text, not preceded by an escaped backslash (which would make it text)."""


def _depth(value: Any) -> int:
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        deepest = max(deepest, depth)
        if depth > MAX_JSON_DEPTH:
            break
        if isinstance(item, dict):
            pending.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list | tuple):
            pending.extend((child, depth + 1) for child in item)
    return deepest


def check_text(text: str) -> str:
    """Raise InvalidInput for a string PostgreSQL cannot store or UTF-8 cannot encode."""
    if "\x00" in text:
        raise InvalidInput("strings may not contain NUL (\\u0000)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(
            "strings may not contain unpaired surrogates (\\ud800-\\udfff)"
        ) from None
    return text


def check_one_line(text: str) -> str:
    """Raise InvalidInput for text that is not one printable line: no control characters
    (tabs and line breaks included), nothing that `check_text` refuses."""
    check_text(text)
    if _CONTROL.search(text):
        raise InvalidInput("may not contain control characters (tabs, line breaks, ...)")
    return text


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class NewMessage(BaseModel):
    """One message to enqueue. Field names in JSON are camelCase, as in the HTTP API."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    message: Any = Field(description="The JSON body")
    message_id: str | None = Field(
        None,
        alias="messageId",
        min_length=1,
        max_length=MAX_MESSAGE_ID_LENGTH,
        description="Identity: enqueueing an existing messageId updates that message",
    )
    tracking_id: uuid.UUID | None = Field(
        None,
        alias="trackingId",
        description="A UUID chosen by the sender instead of a random one; refused (409) when "
        "it already names another message",
    )
    at: datetime | None = Field(None, description="Not processed before this time")
    after: float | None = Field(
        None, ge=0, le=MAX_SECONDS, description="Not processed before now + seconds"
    )
    priority: int = Field(0, ge=-MAX_PRIORITY - 1, le=MAX_PRIORITY)
    status: str | None = Field(None, description="Status instead of the queue's default")
    headers: dict[str, Any] | None = None
    expires_at: datetime | None = Field(None, alias="expiresAt")
    expires_after: float | None = Field(
        None,
        gt=0,
        le=MAX_SECONDS,
        validation_alias=AliasChoices("expiresAfter", "expires_after"),
        serialization_alias="expiresAfter",
    )

    correlation_id: str | None = Field(
        None,
        alias="correlationId",
        min_length=1,
        max_length=MAX_CORRELATION_ID_LENGTH,
        description="The caller's correlation id: many messages may share one; searchable "
        "across queues and handed to the handler",
    )
    label: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_LABEL_LENGTH,
        description="A short human name for the message, shown in the UI's lists",
    )

    group_key: str | None = Field(
        None,
        alias="groupKey",
        min_length=1,
        max_length=MAX_GROUP_KEY_LENGTH,
        description="Ordered group (spec.groups): messages of one key run in id order, at most "
        "the queue's groups.concurrency at once",
    )

    @field_validator("status")
    @classmethod
    def _status(cls, value: str | None) -> str | None:
        return None if value is None else names.settable_status(value)

    @field_validator("at", "expires_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("needs a timezone, e.g. 2026-01-31T12:00:00Z")
        try:
            return value.astimezone(UTC)
        except OverflowError:
            raise ValueError("out of range: in UTC it must fall in the years 1 to 9999") from None

    @field_validator("message", "headers")
    @classmethod
    def _json(cls, value: Any) -> Any:
        if value is not None:  # JSON null (no headers) is always valid
            check_json(value)
        return value

    @field_validator("message_id")
    @classmethod
    def _message_id(cls, value: str | None) -> str | None:
        return None if value is None else check_text(value)

    @field_validator("correlation_id", "label", "group_key")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return None if value is None else check_one_line(value)

    @model_validator(mode="after")
    def _one_schedule(self) -> NewMessage:
        if self.at is not None and self.after is not None:
            raise ValueError("give either 'at' or 'after', not both")
        if self.expires_at is not None and self.expires_after is not None:
            raise ValueError("give either 'expiresAt' or 'expiresAfter', not both")
        return self


EnqueueOutcome = Literal["inserted", "updated", "discarded", "kept"]
"""`kept`: the dedupe mode left the existing row of the messageId as it was (its id, tracking
id, status and version are reported)."""


@dataclass(frozen=True)
class Enqueued:
    id: int | None
    tracking_id: uuid.UUID | None
    message_id: str | None
    outcome: EnqueueOutcome
    status: str | None
    version: int | None


DeliveryOutcome = Literal["inserted", "updated", "discarded", "kept", "filtered"]


@dataclass(frozen=True)
class Delivery:
    """What publishing did in one subscribed queue: the enqueue's outcome, or `filtered` when
    the subscription's predicate did not match the body (nothing written: the ids are None)."""

    queue: str
    outcome: DeliveryOutcome
    id: int | None
    tracking_id: uuid.UUID | None
    message_id: str | None
    status: str | None
    version: int | None

    @classmethod
    def of(cls, queue: str, enqueued: Enqueued) -> Delivery:
        e = enqueued
        return cls(queue, e.outcome, e.id, e.tracking_id, e.message_id, e.status, e.version)


@dataclass(frozen=True)
class ColumnSpec:
    """How a Message attribute is stored: its SQL type (or the engine's JSON/id type)."""

    type: sa.types.TypeEngine[Any] | Literal["id", "json"]
    nullable: bool = True
    server_default: str | None = None


def _stored(
    type_: sa.types.TypeEngine[Any] | Literal["id", "json"],
    *,
    nullable: bool = True,
    server_default: str | None = None,
    json_key: str | None = None,
) -> dict[str, Any]:
    """A Message field's metadata: its column, and its JSON key when not its camelCase name."""
    return {"column": ColumnSpec(type_, nullable, server_default), "json_key": json_key}


@dataclass
class Message:
    """A stored message. The one definition of a queue table's columns (in this order, so
    `Message(*row)` reads a row) and of the message's JSON shape (camelCase names, but for the
    two correlation ids: `correlationId` is the caller's, `leaseBatchId` the worker's)."""

    id: int = field(metadata=_stored("id", nullable=False))
    message_id: str | None = field(metadata=_stored(sa.String(MAX_MESSAGE_ID_LENGTH)))
    status: str = field(metadata=_stored(sa.String(64), nullable=False))
    priority: int = field(metadata=_stored(sa.SmallInteger(), nullable=False, server_default="0"))
    message: Any = field(metadata=_stored("json", nullable=False))
    previous_message: Any = field(metadata=_stored("json"))
    headers: dict[str, Any] | None = field(metadata=_stored("json"))
    version: int = field(metadata=_stored(sa.Integer(), nullable=False, server_default="1"))
    attempts: int = field(metadata=_stored(sa.Integer(), nullable=False, server_default="0"))
    process_after: datetime = field(metadata=_stored(UtcDateTime(), nullable=False))
    expires_at: datetime | None = field(metadata=_stored(UtcDateTime()))
    lease_expires_at: datetime | None = field(metadata=_stored(UtcDateTime()))
    lease_owner: str | None = field(metadata=_stored(sa.String(200)))
    correlation_id: str | None = field(metadata=_stored(sa.String(100), json_key="leaseBatchId"))
    """The lease batch that last took the message (the worker's; `leaseBatchId` in JSON)."""
    tracking_id: uuid.UUID = field(metadata=_stored(sa.Uuid(), nullable=False))
    result: Any = field(metadata=_stored("json"))
    progress: Any = field(metadata=_stored("json"))
    last_error: str | None = field(metadata=_stored(sa.Text()))
    created_at: datetime = field(metadata=_stored(UtcDateTime(), nullable=False))
    updated_at: datetime = field(metadata=_stored(UtcDateTime(), nullable=False))
    processed_at: datetime | None = field(metadata=_stored(UtcDateTime()))
    started_at: datetime | None = field(metadata=_stored(UtcDateTime()))
    """When the lease of the latest attempt began (the database clock); kept once finished."""
    app_correlation_id: str | None = field(
        default=None,
        metadata=_stored(sa.String(MAX_CORRELATION_ID_LENGTH), json_key="correlationId"),
    )
    """The caller's correlation id (`correlationId` in JSON; `correlation_id` is the column of
    the worker's lease batch, `leaseBatchId` in JSON)."""
    label: str | None = field(default=None, metadata=_stored(sa.String(MAX_LABEL_LENGTH)))
    """A short human name the caller gave the message."""
    group_key: str | None = field(default=None, metadata=_stored(sa.String(MAX_GROUP_KEY_LENGTH)))
    """The ordered group the message belongs to (`spec.groups`): given at enqueue or found
    at the spec's `keyPath` in the body."""

    @classmethod
    def from_row(cls, row: Any) -> Message:
        """From a result row's mapping (`row._mapping`)."""
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})

    def to_json(self, keys: Iterable[str] | None = None) -> dict[str, Any]:
        """JSON-ready dict with camelCase keys, as the CLI and the HTTP API show it; only the
        given camelCase `keys` (in their order) when asked, e.g. for an HTTP handler's body."""
        return {
            key: _json_ready(getattr(self, MESSAGE_ATTRIBUTES[key]))
            for key in (keys if keys is not None else MESSAGE_ATTRIBUTES)
        }


def _json_ready(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


MESSAGE_ATTRIBUTES = {f.metadata["json_key"] or to_camel(f.name): f.name for f in fields(Message)}
"""camelCase JSON key -> Message attribute, in table order."""


def message_columns() -> list[tuple[str, ColumnSpec]]:
    """Each stored attribute of a message with its column, in table order."""
    return [(f.name, f.metadata["column"]) for f in fields(Message)]


@dataclass(frozen=True)
class Completion:
    """Success of a leased message; optionally run it again later, with a result or progress."""

    message: Message
    process_again_at: datetime | None = None
    result: Any = None
    progress: Any = None


@dataclass(frozen=True)
class Failure:
    message: Message
    error: str
    permanent: bool = False
    """The handler says retrying is pointless: straight to Error."""


@dataclass
class Settled:
    """What happened to a batch of completions or failures."""

    processed: int = 0
    deleted: int = 0
    rescheduled: int = 0
    retrying: int = 0
    errored: int = 0
    requeued_newer_version: int = 0
    lease_lost: int = 0

    def __add__(self, other: Settled) -> Settled:
        return Settled(**{k: v + getattr(other, k) for k, v in asdict(self).items()})


@dataclass(frozen=True)
class LeaseBatch:
    correlation_id: str
    owner: str
    messages: list[Message]
    paused: bool = False
    """The queue is paused (`queue pause`, `spec.paused`): nothing was leased."""
    throttled_for: float | None = None
    """The queue's rate limit cut this batch short: seconds until its next message may be
    leased (database clock)."""
    at_concurrency_limit: bool = False
    """The queue's global concurrency is reached: nothing was leased (a settled message frees
    a slot)."""

    @property
    @deprecated("LeaseBatch.at_limit is deprecated: use at_concurrency_limit")
    def at_limit(self) -> bool:
        """Deprecated (to be removed in the release after next): `at_concurrency_limit`."""
        return self.at_concurrency_limit


@dataclass
class Swept:
    abandoned: int = 0
    retried: int = 0
    errored: int = 0
    expired: int = 0


Health = Literal["Healthy", "Degraded", "Unhealthy", "Disabled"]


@dataclass
class QueueStats:
    queue: str
    counts: dict[str, int]
    backlog: int
    """Pending messages plus Sleeping ones that are due."""
    leased: int
    oldest_pending_seconds: float
    health: Health
    health_reasons: list[str] = field(default_factory=list)
    approximate: list[str] = field(default_factory=list)
    """Statuses whose count is an estimate (large, finished ones on PostgreSQL)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "counts": self.counts,
            "backlog": self.backlog,
            "leased": self.leased,
            "oldestPendingSeconds": round(self.oldest_pending_seconds, 3),
            "health": self.health,
            "healthReasons": self.health_reasons,
            "approximate": self.approximate,
        }


def retry_delay(attempts: int, delay: float, backoff: str, max_delay: float) -> float:
    """Delay before the next try after `attempts` tries, before jitter."""
    if backoff == "fixed":
        return min(delay, max_delay)
    exponent = min(max(attempts - 1, 0), 60)
    return min(delay * math.pow(2, exponent), max_delay)
