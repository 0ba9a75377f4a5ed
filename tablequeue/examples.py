"""Example handlers, used by examples/queue.yaml, scripts/try and `tablequeue dev`."""

from __future__ import annotations

from typing import Any

from tablequeue.models import Message


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
