"""The guard on the commands that write a status: a typo such as `Pendng` would park messages
where no worker looks, so a status must be known or already held by a message of the queue."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from tablequeue import Database, Queue, names
from tablequeue.errors import InvalidInput

F = TypeVar("F", bound=Callable[..., Any])


def new_status_option(function: F) -> F:
    return click.option(
        "--new-status",
        is_flag=True,
        help="The status is new on purpose: set it though it is neither a built-in status, nor "
        "the queue's default, nor held by a message of the queue.",
    )(function)


def check(
    database: Database, queue: Queue, statuses: Iterable[str | None], new_status: bool
) -> None:
    """InvalidInput, with the closest known status, for a status nobody would recognize."""
    given = [names.settable_status(s) for s in statuses if s is not None]
    if new_status:
        return
    known = {*names.BUILT_IN, database.default_status_of(queue.name)}
    unknown = sorted(set(given) - known)
    if not unknown:
        return
    held = {status for status, count in queue.stats().counts.items() if count}
    for status in unknown:
        if status in held:
            continue
        settable = sorted((known | held) - {names.LEASED})
        matches = difflib.get_close_matches(status, settable, n=1)
        hint = f"; did you mean {matches[0]!r}?" if matches else ""
        raise InvalidInput(
            f"status {status!r} is not a known status and no message of queue {queue.name!r} "
            f"has it{hint} (--new-status sets it anyway)"
        )
