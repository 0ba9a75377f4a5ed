"""Topics: publish one message to every queue subscribed to a topic (publish/subscribe), list
the subscriptions, and subscribe or unsubscribe a queue at runtime (where its spec allows)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Response
from pydantic import BeforeValidator, Field

from tablequeue.durations import parse_duration
from tablequeue.errors import InvalidInput
from tablequeue.models import NewMessage
from tablequeue.names import QUEUE_NAME, TOPIC_NAME
from tablequeue.predicate import MAX_LENGTH as MAX_PREDICATE_LENGTH

from ..dependencies import ADMIN, READER, DatabaseArg
from ..schemas import Delivery, Model, Out, PublishResponse

router = APIRouter(tags=["topics"])
TopicArg = Annotated[str, Path(description=f"Topic name ({TOPIC_NAME.pattern})")]
QueueNameArg = Annotated[str, Path(description=f"Queue name ({QUEUE_NAME.pattern})")]


@router.post("/topics/{topic}/messages", dependencies=ADMIN)
def publish(
    database: DatabaseArg, topic: TopicArg, body: Annotated[NewMessage, Body()]
) -> PublishResponse:
    """Publish one message: enqueued, in one transaction, into every queue subscribed to the
    topic (its `spec.subscriptions` or a runtime subscription that has not expired) whose
    predicate matches the body. One delivery per subscribed queue (`filtered`: its predicate
    did not match); none when nobody subscribes (nothing is stored: 200 with an empty list)."""
    options = body.model_dump(exclude_unset=True, exclude={"message"})
    deliveries = database.publish(topic, body.message, **options)
    return PublishResponse(topic=topic, deliveries=[Delivery.of(d) for d in deliveries])


class SubscriptionOut(Out):
    topic: str
    queue: str
    where: str | None = Field(description="Only bodies matching this predicate")
    origin: str = Field(description="`spec` (spec.subscriptions) or `runtime`")
    expires_at: datetime | None = Field(description="When a runtime subscription ends")

    @classmethod
    def of(cls, subscription: Any) -> SubscriptionOut:
        return cls(
            topic=subscription.topic,
            queue=subscription.queue,
            where=subscription.where,
            origin=subscription.origin,
            expires_at=subscription.expires_at,
        )


class SubscriptionList(Out):
    subscriptions: list[SubscriptionOut] = Field(description="By topic, then queue")


def _duration(value: Any) -> timedelta | None:
    """`90s`, `1h30m`, `7d` or seconds; "forever" is refused (leaving it out is the longest)."""
    if value is None:
        return None
    duration = parse_duration(value)
    if duration is None:
        raise ValueError("leave expiresAfter out for the longest expiry the queue allows")
    return duration


class NewSubscription(Model):
    where: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_PREDICATE_LENGTH,
        description="Only bodies matching this predicate (as in spec.subscriptions)",
    )
    expires_after: Annotated[timedelta | None, BeforeValidator(_duration)] = Field(
        None,
        description="How long it lasts: a duration (`90s`, `1h30m`, `7d`) or seconds; at most "
        "the queue's runtimeSubscriptions.maxExpiry, which is also the default",
    )
    expires_at: datetime | None = Field(
        None, description="When it ends, with a time zone (instead of expiresAfter)"
    )


@router.get("/topics", dependencies=READER)
def subscriptions(
    database: DatabaseArg,
    topic: Annotated[str | None, Query(description="Only this topic's")] = None,
) -> SubscriptionList:
    """Every subscription that has not expired, the spec's and the runtime ones, with its
    origin and expiry."""
    found = database.list_subscriptions(topic)
    return SubscriptionList(subscriptions=[SubscriptionOut.of(s) for s in found])


@router.put("/topics/{topic}/subscriptions/{queue}", dependencies=ADMIN)
def subscribe(
    database: DatabaseArg,
    topic: TopicArg,
    queue: QueueNameArg,
    body: Annotated[NewSubscription, Body()],
) -> SubscriptionOut:
    """Subscribe the queue to the topic at runtime, or replace its runtime subscription of the
    topic. 409 when the queue's spec does not allow runtime subscriptions
    (`runtimeSubscriptions.allowed`) or its spec.subscriptions already name the topic; 400 for
    an expiry past the queue's maxExpiry or already past."""
    if body.expires_after is not None and body.expires_at is not None:
        raise InvalidInput("give expiresAfter or expiresAt, not both")
    expires = body.expires_after if body.expires_after is not None else body.expires_at
    made = database.subscribe(topic, queue, where=body.where, expires=expires)
    return SubscriptionOut.of(made)


@router.delete("/topics/{topic}/subscriptions/{queue}", status_code=204, dependencies=ADMIN)
def unsubscribe(database: DatabaseArg, topic: TopicArg, queue: QueueNameArg) -> Response:
    """End the queue's runtime subscription to the topic (404 when it has none; 409 for one of
    its spec.subscriptions)."""
    database.unsubscribe(topic, queue)
    return Response(status_code=204)
