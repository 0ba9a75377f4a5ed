"""The example queues and messages `tablequeue dev` starts with; their handlers are in
`tablequeue.examples`."""

from __future__ import annotations

from tablequeue.models import NewMessage
from tablequeue.spec import QueueResource


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
