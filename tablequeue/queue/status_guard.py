"""The guard on writing a status: a typo such as `Pendng` would park messages where no worker
looks, so a status written by a person or a job must be a built-in one, the queue's default, or
one a message of the queue already has; a new status is set only when the caller says so."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from .. import names
from ..errors import InvalidInput
from ..storage import registry
from . import read
from .context import QueueContext


def refuse_unknown(queue: QueueContext, statuses: Iterable[str | None], override: str) -> None:
    """InvalidInput naming the first status nobody would recognize, the closest known one and
    `override` (how the caller sets a new status anyway, e.g. "--new-status")."""
    given = {names.settable_status(s) for s in statuses if s is not None}
    known = {*names.BUILT_IN, registry.default_status_of(queue.storage, queue.name)}
    for status in sorted(given - known):
        if read.messages(
            queue, status=status, where=None, message_id=None, after_id=None, limit=1, order="asc"
        ):
            continue
        held = {s for s, count in read.stats(queue).counts.items() if count}
        settable = sorted((known | held) - {names.LEASED})
        matches = difflib.get_close_matches(status, settable, n=1)
        hint = f"did you mean {matches[0]!r}? " if matches else ""
        raise InvalidInput(
            f"status {status!r} is not a known status and no message of queue {queue.name!r} "
            f"has it; {hint}known: {', '.join(settable)} ({override} sets it anyway)"
        )
