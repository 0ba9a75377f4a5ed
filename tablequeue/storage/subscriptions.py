"""Publish/subscribe storage: `tablequeue_subscriptions`, one row per (topic, queue), written
from the Queue spec's `subscriptions` at apply, in the same transaction as the registry row,
and removed with the queue. At most 100 rows per queue (the spec's bound)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..errors import SpecError
from ..predicate import parse

if TYPE_CHECKING:
    from ..spec import QueueSpec
    from .engine import Storage


def ensure(storage: Storage, connection: Connection) -> None:
    """Create the table if it is missing (idempotent; under the registry's DDL lock)."""
    storage.subscriptions.create(connection, checkfirst=True)


def check(spec: QueueSpec) -> None:
    """Refuse a topic subscribed twice (the CRD's list map refuses it too) and a predicate
    that does not parse (PredicateError names it)."""
    topics = [subscription.topic for subscription in spec.subscriptions]
    twice = sorted({topic for topic in topics if topics.count(topic) > 1})
    if twice:
        raise SpecError(
            f"spec.subscriptions: topic {twice[0]!r} is subscribed twice: one subscription per "
            "topic (join the conditions with 'or')"
        )
    for number, subscription in enumerate(spec.subscriptions):
        if subscription.where is not None:
            try:
                parse(subscription.where)
            except ValueError as error:
                raise type(error)(
                    f"spec.subscriptions[{number}] (topic {subscription.topic!r}): {error}"
                ) from None


def write(storage: Storage, connection: Connection, queue_name: str, spec: QueueSpec) -> None:
    """Make the queue's rows those of its spec."""
    table = storage.subscriptions
    wanted = {s.topic: s.where for s in spec.subscriptions}
    stored = {
        row.topic: row.where_text
        for row in connection.execute(
            sa.select(table.c.topic, table.c.where_text).where(table.c.queue_name == queue_name)
        )
    }
    if stored == wanted:
        return
    forget(storage, connection, queue_name)
    if wanted:
        connection.execute(
            table.insert(),
            [{"topic": t, "queue_name": queue_name, "where_text": w} for t, w in wanted.items()],
        )


def forget(storage: Storage, connection: Connection, queue_name: str) -> None:
    table = storage.subscriptions
    connection.execute(table.delete().where(table.c.queue_name == queue_name))


def subscribers(storage: Storage, connection: Connection, topic: str) -> list[Any]:
    """(queue name, table name, settings, where_text) of the queues subscribed to `topic`, by
    queue name; none when no queue was ever applied (no tables yet)."""
    if not storage.has_subscriptions_table(connection):
        return []
    table, registry = storage.subscriptions, storage.registry
    return list(
        connection.execute(
            sa.select(
                registry.c.name, registry.c.table_name, registry.c.settings, table.c.where_text
            )
            .join(registry, registry.c.name == table.c.queue_name)
            .where(table.c.topic == topic)
            .order_by(registry.c.name)
        )
    )
