"""`--new-status`: the commands that write a status ask the core's guard first
(`Queue.refuse_unknown_statuses`: a typo such as `Pendng` would park messages where no worker
looks), unless this flag says the status is new on purpose."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from tablequeue import Queue

F = TypeVar("F", bound=Callable[..., Any])


def new_status_option(function: F) -> F:
    return click.option(
        "--new-status",
        is_flag=True,
        help="The status is new on purpose: set it though it is neither a built-in status, nor "
        "the queue's default, nor held by a message of the queue.",
    )(function)


def check(queue: Queue, statuses: Iterable[str | None], new_status: bool) -> None:
    """InvalidInput, with the closest known status, for a status nobody would recognize."""
    if not new_status:
        queue.refuse_unknown_statuses(statuses, override="--new-status")
