"""Publish/subscribe: a message published to a topic is enqueued into every queue subscribed
to it whose predicate (if any) matches the body, all in one transaction: the caller's own
(with `connection`, as for enqueue) or one of tablequeue's.

Predicates are decided in Python (`predicate.holds`, the semantics `--where` has in SQL on
every engine), so the body is matched once, before anything is written.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy.engine import Connection

from .. import actor, names
from ..errors import InvalidInput
from ..models import Delivery, NewMessage
from ..predicate import Predicate, as_stored, holds, parse
from ..storage import Storage, audit, subscriptions
from .context import QueueContext, spec_of
from .enqueue import enqueue_in


def publish(
    storage: Storage, topic: str, message: NewMessage, connection: Any = None
) -> list[Delivery]:
    """One delivery per subscribed queue, by queue name; none when nobody subscribes (the
    message is dropped: there is nobody to deliver it to)."""
    names.topic_name(topic)
    if connection is None:
        with storage.transaction() as own:
            return publish_in(storage, own, topic, message)
    with storage.borrowed(connection) as theirs:
        return publish_in(storage, theirs, topic, message)


def publish_in(
    storage: Storage, connection: Connection, topic: str, message: NewMessage
) -> list[Delivery]:
    """Publish in `connection`'s transaction (a schedule's tick publishes in its claim's)."""
    if message.tracking_id is not None:
        raise InvalidInput(
            "trackingId names one message, and publishing enqueues one per subscribed queue: "
            "leave it out (each delivery gets its own)"
        )
    body = as_stored(message.message)
    deliveries: list[Delivery] = []
    for row in subscriptions.subscribers(storage, connection, topic):
        if row.where_text is not None and not holds(_parsed(row.where_text), body):
            deliveries.append(Delivery(row.name, "filtered", None, None, None, None, None))
            continue
        spec = spec_of(storage, row.name, row.settings)
        queue = QueueContext(storage, row.name, storage.table(row.table_name), spec)
        [enqueued] = enqueue_in(queue, connection, [message])
        deliveries.append(Delivery.of(row.name, enqueued))
    if actor.current() is not None:  # in the audit trail when a person or tool publishes
        delivered = [d.queue for d in deliveries if d.outcome != "filtered"]
        target = {"topic": topic, "message_id": message.message_id, "queues": delivered}
        audit.record(storage, connection, "publish", None, target, len(delivered))
    return deliveries


@functools.lru_cache(maxsize=1024)
def _parsed(text: str) -> Predicate:
    return parse(text)
