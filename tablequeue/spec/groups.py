"""The Queue spec's `groups`: ordered groups of messages that share a group key, leased in id
order and at most `concurrency` of a key at once (`queue/flow.py` leases them), and the key a
message takes from its body (`keyPath`)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from .base import SpecModel
from .indexes import INDEX_PATH_PATTERN, index_path_segments, valid_index_path

MAX_GROUP_CONCURRENCY = 1000
"""Most messages of one key Leased at once a spec may allow."""


class GroupsSpec(SpecModel):
    """Messages that share a group key run in id order (FIFO), at most `concurrency` at once;
    other keys, and messages without one, run beside them."""

    key_path: Annotated[
        str | None,
        AfterValidator(lambda value: None if value is None else valid_index_path(value)),
        Field(json_schema_extra={"pattern": INDEX_PATH_PATTERN}),
    ] = Field(
        None,
        min_length=1,
        max_length=200,
        description="Body path whose string or number is the group key of a message enqueued "
        "without one, as predicates write it: CustomerId",
    )
    concurrency: int = Field(
        1,
        ge=1,
        le=MAX_GROUP_CONCURRENCY,
        description="Most messages of one group key Leased at once (1: one after the other)",
    )
    on_failure: Literal["release", "hold"] = Field(
        "release",
        description="hold: an Error or Abandoned message holds its group until a person "
        "retries, cancels or deletes it; release: the next message runs",
    )

    def key_of(self, body: Any) -> str | None:
        """The group key `keyPath` finds in `body`: a string, or a number as JSON writes it;
        None when the path is missing or holds anything else (the enqueue checks the key)."""
        if self.key_path is None:
            return None
        value = body
        for segment in index_path_segments(self.key_path):
            if isinstance(segment, int):
                if not isinstance(value, list) or segment >= len(value):
                    return None
            elif not isinstance(value, dict) or segment not in value:
                return None
            value = value[segment]
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return None
        return value if isinstance(value, str) else json.dumps(value)
