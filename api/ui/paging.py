"""The queue page's keyset paging (50 a page, by id, both ways) and ids typed into URLs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from tablequeue import Message, Queue, errors
from tablequeue.limits import MAX_ID

PAGE_SIZE = 50


@dataclass
class Page:
    messages: list[Message]
    newer: int | None  # pass as `before` for the previous page
    older: int | None  # pass as `after` for the next page


def page_of(
    queue: Queue,
    *,
    status: str | None,
    where: str | None,
    order: Literal["asc", "desc"],
    after: int | None,
    before: int | None,
    search: dict[str, Any] | None = None,
) -> Page:
    """One page in display order: `after` continues past an id, `before` goes back from one.
    `search`: the error text and time bounds of `Queue.messages`, by keyword."""
    search = search or {}
    if before is not None:
        backwards: Literal["asc", "desc"] = "asc" if order == "desc" else "desc"
        found = queue.messages(
            status=status,
            where=where,
            after_id=before,
            limit=PAGE_SIZE + 1,
            order=backwards,
            **search,
        )
        more_before = len(found) > PAGE_SIZE
        shown = list(reversed(found[:PAGE_SIZE]))
        return Page(
            shown,
            newer=shown[0].id if shown and more_before else None,
            older=shown[-1].id if shown else None,
        )
    found = queue.messages(
        status=status, where=where, after_id=after, limit=PAGE_SIZE + 1, order=order, **search
    )
    shown = found[:PAGE_SIZE]
    return Page(
        shown,
        newer=shown[0].id if shown and after is not None else None,
        older=shown[-1].id if len(found) > PAGE_SIZE else None,
    )


def example_body(queue: Queue) -> Any:
    """What the enqueue form starts with: the declared example, else the newest body, else {}."""
    if queue.spec.example_message is not None:
        return queue.spec.example_message
    newest = queue.messages(limit=1, order="desc")
    return newest[0].message if newest else {}


def message_id(value: str) -> int | None:
    """A message id from a URL, or None when it cannot be one (ids are BIGINT)."""
    if not (value.isascii() and value.isdigit()) or len(value) > 19 or int(value) > MAX_ID:
        return None
    return int(value)


def page_position(value: str | None) -> int | None:
    """The `after`/`before` id of a page link; a missing or empty one is no position."""
    if value is None or value == "":
        return None
    position = message_id(value.strip())
    if position is None:
        raise errors.InvalidInput(f"invalid page position {value[:20]!r}: expected an id")
    return position
