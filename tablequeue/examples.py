"""Example handlers, named by examples/queue.yaml, scripts/try, benchmarks and `tablequeue dev`.

They stay in the core so that queue files can keep naming them `tablequeue.examples:...`.
"""

from __future__ import annotations

from typing import Any

from .errors import PermanentFailure
from .models import Message


def handle(message: Message) -> dict[str, Any]:
    """Pretend to send an order confirmation e-mail."""
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
