"""Searching a queue's messages by the text of their last error and by when they were created
or last changed (`Queue.messages`).

The error text is matched as a case-insensitive substring: the text is a bound LIKE pattern with
its wildcards (`%`, `_`, and SQL Server's `[`) escaped, so they match themselves. A substring
cannot use a b-tree index: without a status the page scans the table in id order until it is
full (bench/results/search-2026-11-28.md). Time bounds compare with the `created_at` and
`updated_at` columns: `*_after` includes its time, `*_before` excludes its own, so adjacent
ranges never share a message.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime

import sqlalchemy as sa

from ..errors import InvalidInput
from ..limits import MAX_ERROR_SEARCH_LENGTH
from ..models import check_text

_ESCAPE = "/"
_WILDCARDS = str.maketrans({c: _ESCAPE + c for c in (_ESCAPE, "%", "_", "[")})


@dataclass(frozen=True)
class Search:
    """What a page of messages is searched by, besides status and predicate; None: any."""

    error_contains: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None


def conditions(table: sa.Table, search: Search) -> list[sa.ColumnElement[bool]]:
    """The WHERE conditions of `search` on a queue table (values bound, never in the text)."""
    parts: list[sa.ColumnElement[bool]] = []
    if search.error_contains is not None:
        pattern = "%" + _checked_text(search.error_contains).translate(_WILDCARDS) + "%"
        parts.append(table.c.last_error.ilike(pattern, escape=_ESCAPE))
    for field in fields(Search)[1:]:
        at = getattr(search, field.name)
        if at is None:
            continue
        if not isinstance(at, datetime) or at.tzinfo is None:
            raise InvalidInput(f"{field.name}: give a datetime with a time zone, not {at!r}")
        column = table.c.created_at if field.name.startswith("created") else table.c.updated_at
        parts.append(column >= at if field.name.endswith("after") else column < at)
    return parts


def _checked_text(text: str) -> str:
    if not text:
        raise InvalidInput("error_contains: give the text to look for")
    if len(text) > MAX_ERROR_SEARCH_LENGTH:
        raise InvalidInput(f"error_contains: at most {MAX_ERROR_SEARCH_LENGTH} characters")
    try:
        return check_text(text)
    except InvalidInput as error:
        raise InvalidInput(f"error_contains: {error}") from None
