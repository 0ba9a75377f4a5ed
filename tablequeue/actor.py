"""Who is changing things: the person or tool behind an admin action, for the audit trail.

The API sets it for each request that may change something (the token's role, the client's
address), the CLI once for its process (the OS user). Core admin operations record their
change with it (`storage.audit`), in the change's own transaction where there is one. Nothing
is recorded while no actor is set: a Python program using the library, a worker's
housekeeping.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Actor:
    who: str
    """The admin token's role (`admin token`, `open API` when no token is configured) or the
    OS user running the CLI."""
    via: str
    """`api`, `ui` (the admin UI's signed-in browser) or `cli`."""
    address: str | None = None
    """The client's address, for the API and UI."""


_current: ContextVar[Actor | None] = ContextVar("tablequeue_actor", default=None)


def current() -> Actor | None:
    return _current.get()


def act_as(actor: Actor) -> None:
    """From now on in this context (a request's, or the CLI's process), changes are `actor`'s."""
    _current.set(actor)


@contextmanager
def acting_as(actor: Actor) -> Iterator[None]:
    """Changes made inside the block are `actor`'s."""
    token = _current.set(actor)
    try:
        yield
    finally:
        _current.reset(token)
