"""Runtime subscriptions: a queue whose spec allows them (`spec.runtimeSubscriptions`) is
subscribed to a topic, or unsubscribed, without changing its spec, optionally until an expiry
(database clock), bounded by the spec's `maxExpiry`. One subscription per topic and queue: the
spec's cannot be replaced or removed at runtime; a runtime one is replaced by subscribing again.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import names
from ..durations import format_duration
from ..errors import (
    Conflict,
    InvalidInput,
    QueueNotFound,
    RuntimeSubscriptionsNotAllowed,
    SubscriptionNotFound,
)
from ..models import TopicSubscription
from ..predicate import parse
from ..spec import QueueSpec
from ..storage import Storage, audit, registry, subscriptions
from ..storage.schedules import database_now
from ..storage.subscriptions import RUNTIME, SPEC
from .context import spec_of

Expiry = timedelta | datetime | None
"""How long a runtime subscription lasts (from now, database clock) or when it ends."""


def subscribe(
    storage: Storage, topic: str, queue_name: str, where: str | None, expires: Expiry
) -> TopicSubscription:
    """Subscribe the queue to the topic at runtime (replacing its runtime subscription of that
    topic, if any): the subscription as stored."""
    names.topic_name(topic)
    names.queue_name(queue_name)
    if where is not None:
        try:
            parse(where)
        except ValueError as error:
            raise type(error)(f"where: {error}") from None
    try:
        with storage.transaction() as connection:
            spec = _runtime_spec(storage, connection, queue_name)
            existing = subscriptions.stored(storage, connection, topic, queue_name)
            if existing is not None and existing.origin == SPEC:
                raise Conflict(
                    f"queue {queue_name!r} subscribes to topic {topic!r} in its "
                    "spec.subscriptions: one subscription per topic and queue (change the "
                    "spec's instead)"
                )
            now = database_now(connection, storage.dialect)
            expires_at = _expiry(queue_name, spec, now, expires)
            subscription = TopicSubscription(topic, queue_name, where, RUNTIME, expires_at)
            subscriptions.put_runtime(storage, connection, subscription)
            target = {"topic": topic, "where": where, "expiresAt": expires_at}
            audit.record(storage, connection, "subscribe", queue_name, target, 1)
    except sa.exc.IntegrityError:
        raise Conflict(
            f"the subscription of queue {queue_name!r} to topic {topic!r} changed at the same "
            "time: try again"
        ) from None
    return subscription


def unsubscribe(storage: Storage, topic: str, queue_name: str) -> None:
    """End the queue's runtime subscription to the topic (expired or not)."""
    names.topic_name(topic)
    names.queue_name(queue_name)
    with storage.transaction() as connection:
        if registry.find_registry_row(storage, connection, queue_name) is None:
            raise QueueNotFound(f"queue {queue_name!r} does not exist", storage.shown_url)
        if subscriptions.remove_runtime(storage, connection, topic, queue_name):
            audit.record(storage, connection, "unsubscribe", queue_name, {"topic": topic}, 1)
            return
        existing = subscriptions.stored(storage, connection, topic, queue_name)
    if existing is not None:
        raise Conflict(
            f"queue {queue_name!r} subscribes to topic {topic!r} in its spec.subscriptions: "
            "remove it there"
        )
    raise SubscriptionNotFound(
        f"queue {queue_name!r} has no runtime subscription to topic {topic!r}"
    )


def listing(storage: Storage, topic: str | None) -> list[TopicSubscription]:
    """The subscriptions that have not expired, of one topic or all, by topic and queue."""
    if topic is not None:
        names.topic_name(topic)
    with storage.transaction() as connection:
        return subscriptions.listing(storage, connection, topic)


def _runtime_spec(storage: Storage, connection: Connection, queue_name: str) -> QueueSpec:
    """The queue's spec, refused unless it allows runtime subscriptions."""
    row = registry.find_registry_row(storage, connection, queue_name)
    if row is None:
        raise QueueNotFound(f"queue {queue_name!r} does not exist", storage.shown_url)
    spec = spec_of(storage, queue_name, row.settings)
    if "origin" not in storage.subscription_columns(connection):
        raise Conflict(
            "this database's tablequeue_subscriptions predates runtime subscriptions: apply a "
            "queue with this version of tablequeue first (`tablequeue queue apply`, or the "
            "operator), which adds their columns"
        )
    if not spec.allows_runtime_subscriptions:
        raise RuntimeSubscriptionsNotAllowed(
            f"queue {queue_name!r} does not allow runtime subscriptions: its Queue spec needs "
            "runtimeSubscriptions.allowed: true"
        )
    return spec


def _expiry(queue_name: str, spec: QueueSpec, now: datetime, expires: Expiry) -> datetime | None:
    """When the subscription ends: `expires` from `now` (or at it), else the spec's
    maxExpiry from now, else never; refused past the maxExpiry or already past."""
    longest = spec.runtime_subscriptions.max_expiry if spec.runtime_subscriptions else None
    if expires is None:
        return None if longest is None else _later(now, longest)
    if isinstance(expires, timedelta):
        if expires <= timedelta(0):
            raise InvalidInput(f"expiry {format_duration(expires)}: give a duration above 0s")
        ends = None if longest is not None and expires > longest else _later(now, expires)
    else:
        ends = _aware(expires)
        if ends <= now:
            raise InvalidInput(
                f"expiry {ends.isoformat()} is already past (database clock: {now.isoformat()})"
            )
    if ends is None or (longest is not None and ends - now > longest):
        raise InvalidInput(
            f"expiry {_shown(expires)} is beyond queue {queue_name!r}'s "
            f"runtimeSubscriptions.maxExpiry ({format_duration(longest)})"
        )
    return ends


def _later(now: datetime, duration: timedelta) -> datetime:
    try:
        return now + duration
    except OverflowError:
        raise InvalidInput(
            f"expiry {format_duration(duration)} ends after the year 9999: give a shorter one"
        ) from None


def _aware(instant: datetime) -> datetime:
    """The instant in UTC, as it is stored."""
    if instant.tzinfo is None:
        raise InvalidInput(
            f"expiry {instant.isoformat()} has no time zone: add one (e.g. Z or +02:00)"
        )
    try:
        return instant.astimezone(UTC)
    except OverflowError:
        raise InvalidInput(
            f"expiry {instant.isoformat()} is after the year 9999 in UTC: give an earlier one"
        ) from None


def _shown(expires: Any) -> str:
    return format_duration(expires) if isinstance(expires, timedelta) else expires.isoformat()
