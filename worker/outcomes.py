"""A handler's end as the worker records and logs it: shared by single and batch handlers."""

from __future__ import annotations

import logging

from tablequeue.models import Completion, Message

from .handlers import Outcome

log = logging.getLogger("tablequeue.worker")


def completion(message: Message, result: Outcome | None) -> Completion:
    """The success a handler returned (None: plain success)."""
    if result is None:
        return Completion(message)
    return Completion(message, result.process_again_at, result.result, result.progress)


def log_stopped(message: Message, reason: str) -> None:
    """The worker stopped the handler because the message's lease was lost."""
    log.info(
        "handler stopped: " + reason,
        extra={"lease_batch_id": message.correlation_id, "message_id": message.id},
    )


def log_failed(message: Message, error: str) -> None:
    log.warning(
        "handler failed",
        extra={
            "lease_batch_id": message.correlation_id,
            "message_id": message.id,
            "error": error[:500],
        },
    )
