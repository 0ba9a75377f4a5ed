"""A Queue's schedules (`spec.schedules`): a message enqueued on every tick of a cron expression.

The strings of a schedule are checked when the spec is: the cron expression and time zone, and
its message, headers and messageId rendered with a sample tick (see tablequeue/cron.py). The
check is linear in their size, which is bounded (`MAX_SCHEDULE_TEMPLATE_BYTES`): specs are read
on open routes and by the operator for every tenant.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from .. import cron
from ..limits import MAX_MESSAGE_ID_LENGTH, MAX_PRIORITY, MAX_SCHEDULE_TEMPLATE_BYTES
from ..names import TOPIC_NAME
from .base import FREE_FORM, SpecModel

MissedTicks = Literal["CatchUpOnce", "Skip"]
SCHEDULE_NAME_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$"


def _cron(value: str) -> str:
    expression = cron.cron_expression(value)
    try:
        cron.next_tick(expression, "UTC", cron.SAMPLE_TICK)
    except (ValueError, KeyError, ArithmeticError) as error:  # croniter's errors are ValueErrors
        raise ValueError(f"cron expression {value!r} never fires: {error}") from None
    return expression


def _time_zone(value: str) -> str:
    cron.time_zone(value)
    return value


CronExpression = Annotated[
    str, AfterValidator(_cron), Field(min_length=1, max_length=200, description="Cron")
]
TimeZone = Annotated[str, AfterValidator(_time_zone), Field(min_length=1, max_length=64)]


RESERVED_HEADER_PREFIX: Final = "tablequeue-"


class Schedule(SpecModel):
    """A message enqueued on every tick of a cron expression (see tablequeue/cron.py)."""

    name: str = Field(
        pattern=SCHEDULE_NAME_PATTERN, max_length=63, description="Unique within the queue"
    )
    cron: CronExpression = Field(
        description="5 fields: minute hour day-of-month month day-of-week, or @daily etc."
    )
    time_zone: TimeZone = Field("UTC", description="IANA time zone the cron expression reads")
    message: Any = Field(
        json_schema_extra=FREE_FORM,
        description="The body; strings may hold {{ tick }}, {{ tick:%Y-%m-%d }}, {{ tickUtc }}, "
        "{{ tickEpoch }}, {{ schedule }}, {{ queue }}",
    )
    message_id: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_MESSAGE_ID_LENGTH,
        description="messageId pattern, e.g. nightly-{{ tick:%Y%m%d }}; without placeholders "
        "every tick updates one message",
    )
    priority: int = Field(0, ge=-MAX_PRIORITY - 1, le=MAX_PRIORITY, description="Priority")
    topic: str | None = Field(
        None,
        pattern=TOPIC_NAME.pattern,
        max_length=63,
        description="Publish each tick's message to this topic (every queue subscribed to it "
        "gets it, as its predicate says) instead of enqueueing it into this queue",
    )
    headers: dict[str, Any] | None = Field(
        None, json_schema_extra=FREE_FORM, description="Headers; values may hold placeholders"
    )
    missed: MissedTicks = Field(
        "CatchUpOnce",
        description="Ticks missed while nothing ran: CatchUpOnce enqueues one message for the "
        "latest of them; Skip enqueues nothing for a tick older than startingDeadlineSeconds",
    )
    starting_deadline_seconds: int = Field(
        300, ge=1, le=86400, description="A later tick counts as missed (Skip)"
    )
    suspend: bool = Field(
        False, description="Fire nothing; ticks passing meanwhile are missed ticks on resume"
    )

    @model_validator(mode="after")
    def _renders(self) -> Schedule:
        sample = cron.TickContext("queue", self.name, cron.SAMPLE_TICK)
        try:
            template = json.dumps([self.message, self.headers], ensure_ascii=False)
            if len(template.encode()) > MAX_SCHEDULE_TEMPLATE_BYTES:
                raise ValueError(
                    f"message and headers are {len(template.encode())} bytes of JSON: at most "
                    f"{MAX_SCHEDULE_TEMPLATE_BYTES}"
                )
            body = cron.render(self.message, sample)
            cron.render(self.headers, sample)
            text = json.dumps(body, allow_nan=False)  # what the enqueue checks further
            if "\\u0000" in text:
                raise ValueError("strings may not contain NUL (\\u0000)")
            if self.message_id is not None:
                rendered = cron.render_text(self.message_id, sample)
                if not rendered or len(rendered) > MAX_MESSAGE_ID_LENGTH:
                    raise ValueError(
                        f"messageId {self.message_id!r} renders to {len(rendered)} characters: "
                        f"it needs 1 to {MAX_MESSAGE_ID_LENGTH}"
                    )
        except (ValueError, RecursionError) as error:
            raise ValueError(f"schedule {self.name!r}: {error}") from None
        return self

    @field_validator("headers")
    @classmethod
    def _own_headers(cls, headers: dict[str, Any] | None) -> dict[str, Any] | None:
        for name in headers or {}:
            if name.lower().startswith(RESERVED_HEADER_PREFIX):
                raise ValueError(
                    f"header {name[:100]!r}: names starting with {RESERVED_HEADER_PREFIX!r} are "
                    "written by tablequeue (tablequeue-schedule, tablequeue-tick)"
                )
        return headers
