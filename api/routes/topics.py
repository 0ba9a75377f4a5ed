"""Topics: publish one message to every queue subscribed to a topic (publish/subscribe)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Path

from tablequeue.models import NewMessage
from tablequeue.names import TOPIC_NAME

from ..dependencies import ADMIN, DatabaseArg
from ..schemas import Delivery, PublishResponse

router = APIRouter(tags=["topics"])


@router.post("/topics/{topic}/messages", dependencies=ADMIN)
def publish(
    database: DatabaseArg,
    topic: Annotated[str, Path(description=f"Topic name ({TOPIC_NAME.pattern})")],
    body: Annotated[NewMessage, Body()],
) -> PublishResponse:
    """Publish one message: enqueued, in one transaction, into every queue whose
    `spec.subscriptions` name the topic and whose predicate matches the body. One delivery per
    subscribed queue (`filtered`: its predicate did not match); none when nobody subscribes
    (nothing is stored: 200 with an empty list)."""
    options = body.model_dump(exclude_unset=True, exclude={"message"})
    deliveries = database.publish(topic, body.message, **options)
    return PublishResponse(topic=topic, deliveries=[Delivery.of(d) for d in deliveries])
