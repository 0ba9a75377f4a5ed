"""`tablequeue publish TOPIC JSON`: one message into every queue subscribed to a topic;
`tablequeue topics`: the subscriptions, and subscribing or unsubscribing a queue at runtime."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import click

from tablequeue import connect

from .completion import queue_names
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
    spec.subscriptions (or a runtime subscription) name the topic and whose predicate matches
    the body."""
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


@click.group()
def topics() -> None:
    """Subscriptions to topics: list them, subscribe or unsubscribe a queue at runtime."""


def _shown(subscription: Any) -> dict[str, Any]:
    return {
        "topic": subscription.topic,
        "queue": subscription.queue,
        "where": subscription.where,
        "origin": subscription.origin,
        "expiresAt": subscription.expires_at and subscription.expires_at.isoformat(),
    }


@topics.command("list")
@click.argument("topic", required=False)
@db_options
def list_(db_url: str, as_json: bool, topic: str | None) -> None:
    """Every subscription that has not expired (of TOPIC only, if given): spec.subscriptions
    (origin spec) and runtime ones (origin runtime), with their expiry."""
    with connect(db_url) as database:
        found = database.list_subscriptions(topic)
    emit(as_json, [_shown(s) for s in found], empty="no subscriptions")


@topics.command()
@click.argument("topic")
@click.argument("queue_name", metavar="QUEUE", shell_complete=queue_names)
@click.option("--where", help="Only messages whose body matches this predicate.")
@click.option(
    "--expires-after",
    metavar="DURATION",
    help="End it after this long (30m, 7d); at most, and by default, the queue's "
    "runtimeSubscriptions.maxExpiry.",
)
@click.option("--expires-at", metavar="TIME", help="End it at this time (ISO 8601 with a zone).")
@db_options
def subscribe(
    db_url: str,
    as_json: bool,
    topic: str,
    queue_name: str,
    where: str | None,
    expires_after: str | None,
    expires_at: str | None,
) -> None:
    """Subscribe QUEUE to TOPIC at runtime (its spec must allow it: runtimeSubscriptions), or
    replace its runtime subscription of TOPIC."""
    if expires_after is not None and expires_at is not None:
        raise click.UsageError("give --expires-after or --expires-at, not both")
    seconds = _duration_seconds(expires_after, "--expires-after")
    expires = timedelta(seconds=seconds) if seconds is not None else None
    with connect(db_url) as database:
        made = database.subscribe(
            topic,
            queue_name,
            where=where,
            expires=expires or _timestamp(expires_at, "--expires-at"),
        )
    emit(as_json, _shown(made))


@topics.command()
@click.argument("topic")
@click.argument("queue_name", metavar="QUEUE", shell_complete=queue_names)
@db_options
def unsubscribe(db_url: str, as_json: bool, topic: str, queue_name: str) -> None:
    """End QUEUE's runtime subscription to TOPIC (those of its spec change with the spec)."""
    with connect(db_url) as database:
        database.unsubscribe(topic, queue_name)
    emit(as_json, {"topic": topic, "queue": queue_name, "unsubscribed": True})
