"""Dedupe at enqueue: the rule of one call (its own mode, else the queue's `spec.dedupe`) and
what became of the messages whose statement left an existing row as it was (`kept`).

The statement of a round writes only the rows its mode replaces or inserts
(`dialects/queries/enqueue.py`); the rows it left are then read by messageId on the same
connection, in the same transaction: a row another transaction inserted concurrently is
committed by then (the unique index made this statement wait for it), so both callers are told
the one row there is."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection

from ..models import Enqueued, NewMessage
from ..spec.dedupe import Dedupe, for_call
from .context import QueueContext

READ_AT_ONCE = 1_000
"""messageIds per read of the rows left (a bound parameter each: engines limit how many)."""


def rule(queue: QueueContext, mode: str | None, window: object) -> Dedupe:
    """The call's rule: its own mode (and window), else the queue's."""
    return for_call(queue.spec.dedupe, mode, window)


def report_left(
    queue: QueueContext,
    connection: Connection,
    dedupe: Dedupe,
    messages: Sequence[NewMessage],
    round_indexes: Sequence[int],
    results: list[Enqueued | None],
) -> None:
    """Turn the round's messages that wrote nothing into `kept`, with the row left as it was:
    its id, tracking id, status and version (all None when it was deleted since). In mode
    window a row whose window had passed was left by an idempotent queue's comparison of
    equal bodies instead: that message stays `discarded`."""
    if dedupe.mode == "replace":
        return
    left = [i for i in round_indexes if (r := results[i]) is not None and r.outcome == "discarded"]
    message_ids = [messages[i].message_id for i in left]
    rows: dict[str, Any] = {}
    parameters: dict[str, Any] = {}
    if dedupe.mode == "window":
        parameters["b_window"] = dedupe.window_seconds
    statement = queue.queries.left_rows(dedupe.mode)
    for start in range(0, len(message_ids), READ_AT_ONCE):
        chunk = message_ids[start : start + READ_AT_ONCE]
        found = connection.execute(statement, parameters | {"b_message_ids": chunk})
        rows |= {row.message_id: row for row in found}
    for index in left:
        message_id = messages[index].message_id
        row = rows.get(message_id or "")
        if row is None:
            results[index] = Enqueued(None, None, message_id, "kept", None, None)
        elif dedupe.mode == "keep" or row.within:
            tracking_id = uuid.UUID(str(row.tracking_id))
            results[index] = Enqueued(
                row.id, tracking_id, message_id, "kept", row.status, row.version
            )
