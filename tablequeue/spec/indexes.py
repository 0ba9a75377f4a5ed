"""The Queue spec's `indexes`: body paths written as predicates write them, checked so an
index can put them into DDL."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from .base import SpecModel

_PATH_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PATH_KEY = r'\["[A-Za-z0-9_ .:@/$+][A-Za-z0-9_ .:@/$+-]{0,63}"\]'
INDEX_PATH_PATTERN = rf"^({_PATH_NAME}|{_PATH_KEY})(\.{_PATH_NAME}|\[[0-9]{{1,9}}\]|{_PATH_KEY})*$"
"""Paths of the predicate language (`Product.Sku`, `Items[0]["unit price"]`) whose quoted keys
hold letters, digits, space and `_ . : @ / $ + -` (not first): an index writes them into DDL."""
_INDEX_PATH = re.compile(INDEX_PATH_PATTERN)
_PATH_SEGMENT = re.compile(rf'\.?({_PATH_NAME})|\[([0-9]+)\]|\["([^"]*)"\]')
_KEYWORDS = frozenset({"and", "or", "not", "true", "false", "null"})


def index_path_segments(value: str) -> tuple[str | int, ...]:
    """The segments of a valid index path: `a.b` and `a["b"]` are the same path."""
    return tuple(
        int(m.group(2)) if m.group(2) is not None else (m.group(1) or m.group(3))
        for m in _PATH_SEGMENT.finditer(value)
    )


def valid_index_path(value: str) -> str:
    if not _INDEX_PATH.fullmatch(value):
        raise ValueError(
            f"invalid index path {value[:80]!r}: write it as predicates do (Product.Sku,"
            ' Items[0]["unit price"]); quoted keys may hold letters, digits, space and'
            " _ . : @ / $ + - (not first)"
        )
    first = re.match(_PATH_NAME, value)
    if first and first.group().lower() in _KEYWORDS:
        raise ValueError(
            f"invalid index path {value[:80]!r}: {first.group()!r} is a keyword;"
            f' write ["{first.group()}"]'
        )
    return value


class IndexSpec(SpecModel):
    path: Annotated[
        str,
        AfterValidator(valid_index_path),
        Field(json_schema_extra={"pattern": INDEX_PATH_PATTERN}),
    ] = Field(
        min_length=1, max_length=200, description="Body path, as predicates write it: Product.Sku"
    )
    type: Literal["text", "number", "boolean"] = Field(
        "text", description="JSON type of the values compared: text, number or boolean"
    )
