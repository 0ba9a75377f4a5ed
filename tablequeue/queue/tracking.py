"""Tracking ids the caller chooses (`NewMessage.tracking_id`, as NServiceBus's sender does):
refused before anything is written when the id already names another message.

A tracking id is unique in its queue's table (a unique index) and in the results of finished
messages (`tablequeue_results`, shared by the database's queues: a kept outcome is found by its
tracking id alone). Enqueueing a messageId again with the tracking id it already has is the
same message, not a duplicate."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..errors import InvalidInput, TrackingIdTaken
from ..models import NewMessage
from ..storage import Storage
from .context import QueueContext


def chosen(messages: Sequence[NewMessage]) -> dict[uuid.UUID, NewMessage]:
    """The messages that bring their own tracking id, by it. InvalidInput when the batch gives
    one tracking id to two messages, or one messageId (enqueued twice: a new version) a tracking
    id in one place and another, or none, in another."""
    found: dict[uuid.UUID, NewMessage] = {}
    per_identity: dict[str, set[uuid.UUID | None]] = {}
    for new in messages:
        if new.message_id is not None:
            per_identity.setdefault(new.message_id, set()).add(new.tracking_id)
        if new.tracking_id is None:
            continue
        earlier = found.get(new.tracking_id)
        if earlier is not None and (
            earlier.message_id is None or earlier.message_id != new.message_id
        ):
            raise InvalidInput(f"trackingId {new.tracking_id} is given to two messages")
        found[new.tracking_id] = new
    for message_id, tracking_ids in per_identity.items():
        if len(tracking_ids) > 1:
            raise InvalidInput(
                f"messageId {message_id!r} appears with different trackingIds in one batch: "
                "give each of its versions the same one"
            )
    return found


def refuse_taken(
    queue: QueueContext, connection: Connection, wanted: dict[uuid.UUID, NewMessage]
) -> None:
    """TrackingIdTaken when a chosen tracking id names another message of the queue or a
    finished message's kept outcome, or when a messageId that exists has another one."""
    if not wanted:
        return
    t = queue.table
    by_tracking = sa.select(t.c.id, t.c.tracking_id, t.c.message_id).where(
        t.c.tracking_id.in_(list(wanted))
    )
    for row in connection.execute(by_tracking):
        new = wanted[row.tracking_id]
        if new.message_id is None or new.message_id != row.message_id:
            raise TrackingIdTaken(
                f"trackingId {row.tracking_id} is taken: message {row.id} of queue "
                f"{queue.name!r} has it; choose a new one"
            )
    identities = {new.message_id: new for new in wanted.values() if new.message_id is not None}
    if identities:
        by_message_id = sa.select(t.c.tracking_id, t.c.message_id).where(
            t.c.message_id.in_(list(identities))
        )
        for tracking_id, message_id in connection.execute(by_message_id):
            new = identities[message_id]
            if tracking_id != new.tracking_id:
                raise TrackingIdTaken(
                    f"messageId {message_id!r} exists with trackingId {tracking_id}, "
                    f"not {new.tracking_id}: a message keeps the tracking id it was first "
                    "enqueued with"
                )
    _refuse_kept_results(queue.storage, queue.name, connection, wanted)


def _refuse_kept_results(
    storage: Storage, queue: str, connection: Connection, wanted: dict[uuid.UUID, NewMessage]
) -> None:
    results = storage.history.results
    kept = sa.select(results.c.tracking_id, results.c.queue, results.c.message_id).where(
        results.c.tracking_id.in_(list(wanted))
    )
    for row in connection.execute(kept):
        new = wanted[row.tracking_id]
        if row.queue == queue and new.message_id is not None and row.message_id == new.message_id:
            continue  # the same message, enqueued again after it finished
        raise TrackingIdTaken(
            f"trackingId {row.tracking_id} is taken: a finished message of queue "
            f"{row.queue!r} has it (its outcome is kept); choose a new one"
        )
