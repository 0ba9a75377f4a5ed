"""The base of the Queue spec's models, and the parts of the spec that stand on their own
(the rate limit, runtime subscriptions). `tablequeue.spec` assembles them."""

from __future__ import annotations

import math
from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict

from .durations import Duration

FREE_FORM: JsonDict = {"x-kubernetes-preserve-unknown-fields": True}
"""The CRD schema of a field that holds any JSON (a message, headers, a pod template)."""


class SpecModel(BaseModel):
    """camelCase aliases, unknown fields are errors, strict types (as in the CRD)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True
    )


MAX_RATE = 1_000_000.0
"""Messages per second a rate limit may allow at most."""


class RateLimit(SpecModel):
    """Leases of the queue across all its workers: on average at most `messagesPerSecond`, and
    at most `burst` at once after a quiet spell (a token bucket kept in the database)."""

    messages_per_second: float = Field(
        gt=0, le=MAX_RATE, description="Messages leased per second, all workers together"
    )
    burst: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="Messages leased at once after a quiet spell; default: one second's worth",
    )

    @property
    def bucket_size(self) -> int:
        """`burst`, or one second's worth (at least 1)."""
        return self.burst if self.burst is not None else max(1, math.ceil(self.messages_per_second))


class RuntimeSubscriptions(SpecModel):
    """Whether subscriptions to topics may be made at runtime (`tablequeue topics subscribe`,
    `POST /topics/{topic}/subscriptions`) beside `spec.subscriptions`, and for how long."""

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
