"""A held message whose handler runs: when it started, its task, and why the worker stopped
it, if it did."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from tablequeue.models import Message


@dataclass
class Running:
    message: Message
    started: float
    task: asyncio.Task[None] | None = None
    """The task that runs the handler (a batch call's one task for all its messages)."""
    stop_reason: str | None = None
    """Why the worker cancelled the handler, if it did."""
    stop_fails: bool = False
    """The stop is the message's failure (time limit, grace period), not a lost lease."""
    call: list[Running] | None = None
    """A batch handler's call runs the message with these others: a lost lease stops the call
    only once every message of it has lost its lease."""

    def stop(self, reason: str, *, fails: bool) -> None:
        """Cancel the handler; `fails`: record the reason as the message's failure. The first
        stop decides (a time limit that fired is the failure even if the lease is lost next).
        A batch call is cancelled only by a failure (all its messages fail); a message whose
        lease is lost meanwhile only loses its outcome, the others' go on."""
        if self.stop_reason is None:
            self.stop_reason = reason
            self.stop_fails = fails
        if self.call is not None and not fails and any(o.stop_reason is None for o in self.call):
            return
        if self.task is not None:  # None only before its task is made, in the same step
            self.task.cancel()
