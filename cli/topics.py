"""`tablequeue publish TOPIC JSON`: one message into every queue subscribed to a topic."""

from __future__ import annotations

from typing import Any

import click

from tablequeue import connect

from .messages import _duration_seconds, _headers, _parse_json, _timestamp, delivery_options
from .options import db_options
from .output import emit


@click.command()
@click.argument("topic")
@click.argument("message")
@click.option("--id", "message_id", help="Message identity in each queue (upserts).")
@delivery_options
@db_options
def publish(
    db_url: str,
    as_json: bool,
    topic: str,
    message: str,
    message_id: str | None,
    at: str | None,
    after: str | None,
    priority: int,
    expires_after: str | None,
    headers: tuple[str, ...],
) -> None:
    """Publish one JSON message to TOPIC: enqueued, in one transaction, into every queue whose
    spec.subscriptions name the topic and whose predicate matches the body."""
    options: dict[str, Any] = {
        "message_id": message_id,
        "at": _timestamp(at, "--at"),
        "after": _duration_seconds(after, "--after"),
        "priority": priority,
        "expires_after": _duration_seconds(expires_after, "--expires-after"),
        "headers": _headers(headers),
    }
    options = {k: v for k, v in options.items() if v is not None and v != 0}
    body = _parse_json(message, "message")
    with connect(db_url) as database:
        deliveries = database.publish(topic, body, **options)
    data = {
        "topic": topic,
        "deliveries": [
            {
                "queue": d.queue,
                "outcome": d.outcome,
                "id": d.id,
                "trackingId": d.tracking_id and str(d.tracking_id),
                "messageId": d.message_id,
                "status": d.status,
                "version": d.version,
            }
            for d in deliveries
        ],
    }
    if not deliveries and not as_json:
        click.echo(f"no queue subscribes to {topic!r}: nothing enqueued", err=True)
    emit(as_json, data)
