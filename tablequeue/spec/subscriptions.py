"""The Queue spec's topic subscriptions: those it declares (`subscriptions`) and whether more
may be made at runtime (`runtimeSubscriptions`). `tablequeue.spec` assembles them."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from pydantic import AfterValidator, Field, field_validator

from .. import names
from ..durations import Duration
from .base import SpecModel


class Subscription(SpecModel):
    topic: Annotated[str, AfterValidator(names.topic_name)] = Field(
        json_schema_extra={"pattern": names.TOPIC_NAME.pattern}, description="Topic name"
    )
    where: str | None = Field(  # predicate.MAX_LENGTH; its syntax is checked at apply
        None, min_length=1, max_length=4000, description="Only bodies matching this predicate"
    )


class RuntimeSubscriptions(SpecModel):
    """Whether subscriptions to topics may be made at runtime (`tablequeue topics subscribe`,
    `PUT /topics/{topic}/subscriptions/{queue}`) beside `spec.subscriptions`, and for how long."""

    allowed: bool = Field(False, description="Runtime subscriptions may be made")
    max_expiry: Duration = Field(
        None,
        description="Longest a runtime subscription may last (also the expiry of one made "
        "without); default: forever",
    )

    @field_validator("max_expiry")
    @classmethod
    def _positive(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value <= timedelta(0):
            raise ValueError("maxExpiry must be longer than 0s (or forever)")
        return value
