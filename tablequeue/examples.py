"""Example handlers, used by examples/queue.yaml, scripts/try and `tablequeue dev`."""

from __future__ import annotations

from typing import Any

from tablequeue.models import Message, NewMessage
from tablequeue.spec import QueueResource


def handle(message: Message) -> dict[str, Any]:
    """Pretend to send an order confirmation e-mail."""
    from tablequeue.worker import PermanentFailure

    body = message.message
    if not isinstance(body, dict) or not isinstance(body.get("Email"), str):
        raise PermanentFailure("the message has no Email: nothing to send")
    if body["Email"].endswith("@invalid.example"):
        raise RuntimeError(f"mail server refused {body['Email']}: mailbox does not exist")
    return {"result": {"sent": True, "to": body["Email"]}}


def noop(message: Message) -> None:
    """Do nothing, successfully (benchmarks)."""


async def noop_async(message: Message) -> None:
    """Do nothing, successfully, without a thread (benchmarks)."""


def sync_product(message: Message) -> dict[str, Any] | None:
    """Pretend to push a product to a shop; come back when the next price becomes valid."""
    body = message.message if isinstance(message.message, dict) else {}
    next_price_at = body.get("NextPriceAt")
    return {"processAgainAt": next_price_at} if next_price_at else None


def dev_queues() -> list[QueueResource]:
    """The queues `tablequeue dev` creates: short retry delays so failures show up quickly."""
    return [
        QueueResource.from_name(
            "send-order-confirmation",
            category="Orders",
            max_attempts=3,
            retry={"delay_seconds": 5, "backoff": "exponential", "max_delay_seconds": 60},
            keep_processed_for="forever",
            health={"when_errors": "Unhealthy", "when_abandoned": "Degraded"},
            example_message={"OrderId": "A-1001", "Email": "ann@example.com"},
            workers={"handler": {"python": "tablequeue.examples:handle"}, "concurrency": 2},
        ),
        QueueResource.from_name(
            "product-updates",
            category="Catalogue",
            idempotent=True,
            health={"when_errors": "Degraded"},
            example_message={"Sku": "SKU-1", "Name": "Teapot", "Price": 25},
            workers={"handler": {"python": "tablequeue.examples:sync_product"}},
        ),
    ]


def dev_messages() -> dict[str, list[NewMessage]]:
    """Example messages: most succeed, some fail (and retry, then Error), some are scheduled."""
    orders = [
        NewMessage(message={"OrderId": f"A-{1000 + n}", "Email": f"customer{n}@example.com"})
        for n in range(1, 16)
    ]
    orders += [
        NewMessage(message={"OrderId": "A-2001", "Email": "nobody@invalid.example"}),
        NewMessage(message={"OrderId": "A-2002", "Email": "ghost@invalid.example"}),
        NewMessage(message={"OrderId": "A-2003"}),  # no Email: straight to Error
        NewMessage(message={"OrderId": "A-3001", "Email": "later@example.com"}, after=120),
        NewMessage(message={"OrderId": "A-3002", "Email": "much-later@example.com"}, after=3600),
        NewMessage(message={"OrderId": "A-4001", "Email": "vip@example.com"}, status="OnHold"),
    ]
    products = [
        NewMessage(
            message={"Sku": f"SKU-{n}", "Name": name, "Price": 10 * n},
            message_id=f"SKU-{n}",
        )
        for n, name in enumerate(["Teapot", "Kettle", "Mug", "Saucer", "Spoon"], start=1)
    ]
    return {"send-order-confirmation": orders, "product-updates": products}
