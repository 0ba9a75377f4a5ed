"""The base of the Queue spec's models, and the parts of the spec that stand on their own
(the rate limit). `tablequeue.spec` assembles them."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict

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
