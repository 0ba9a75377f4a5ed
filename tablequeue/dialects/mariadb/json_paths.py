"""MariaDB's JSON paths, and the typed value at a path that predicates compare and JSON indexes
(`mariadb.json_index.MariaDbIndexes`) hold.

MariaDB's paths are lax: `$.a[0]` of an object reads the object itself, and a key that begins
with '-' never matches (`$."-1"`). Predicates read strictly, as SQLite and PostgreSQL do: each
index step must find an array, and such keys are found by their position among JSON_KEYS.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ...errors import InvalidInput
from ..types import JsonKind, JsonPath, path_text

MARIADB_PATH_STEPS = 31
"""MariaDB's JSON path depth limit is 32, `$` included: a longer path reads NULL with a
warning (a predicate on it matched nothing, silently; an INSERT computing a generated column
on it fails): refused."""
JSON_TYPES: dict[JsonKind, tuple[str, ...]] = {
    "string": ("STRING",),
    "number": ("INTEGER", "DOUBLE"),
    "boolean": ("BOOLEAN",),
}


def extract(column: sa.ColumnElement[Any], path: JsonPath) -> sa.ColumnElement[Any]:
    if len(path) > MARIADB_PATH_STEPS:
        raise InvalidInput(
            f"the path {path_text(path)[:200]} has {len(path)} steps: MariaDB reads at most "
            f"{MARIADB_PATH_STEPS}"
        )
    value, steps = column, list[str | int]()
    for segment in path:
        if isinstance(segment, str) and segment.startswith("-"):
            value = _member(_extract_path(value, steps), segment)
            steps = []
        else:
            steps.append(segment)
    return _extract_path(value, steps)


def _extract_path(value: sa.ColumnElement[Any], path: JsonPath) -> sa.ColumnElement[Any]:
    if not path:
        return value
    return sa.func.json_extract(value, sa.bindparam(None, path_text(path), type_=sa.Text))


def _member(value: sa.ColumnElement[Any], key: str) -> sa.ColumnElement[Any]:
    """`value[key]` without a path: the key's position among JSON_KEYS picks the member from
    `$.*`."""
    pattern = key.replace("!", "!!").replace("%", "!%").replace("_", "!_")
    position = sa.func.json_search(
        sa.func.json_keys(value),
        sa.literal_column("'one'"),
        sa.bindparam(None, pattern, type_=sa.Text),
        sa.literal_column("'!'"),
    )
    members = sa.func.json_extract(value, sa.literal_column("'$.*'"))
    return sa.func.json_extract(members, sa.func.json_unquote(position))


def arrays_on_the_way(column: sa.ColumnElement[Any], path: JsonPath) -> list[Any]:
    """An index step must find an array (as in SQLite's and PostgreSQL's strict paths)."""
    return [
        sa.func.coalesce(sa.func.json_type(extract(column, path[:i])), "") == "ARRAY"
        for i, segment in enumerate(path)
        if isinstance(segment, int)
    ]


def typed_value(
    column: sa.ColumnElement[Any], path: JsonPath, kind: JsonKind, strict: bool = True
) -> sa.ColumnElement[Any]:
    """The value at `path` if it is of `kind`, else NULL: text as bytes (compared as code
    points, with no padding and no case folding), numbers as DOUBLE. Not `strict`, the lax
    path may find a value where the strict one finds none."""
    value = extract(column, path)
    arrays = arrays_on_the_way(column, path) if strict else []
    found = sa.and_(sa.func.json_type(value).in_(JSON_TYPES[kind]), *arrays)
    scalar: sa.ColumnElement[Any]
    if kind == "string":
        scalar = sa.cast(sa.func.json_unquote(value), sa.LargeBinary)
    elif kind == "number":
        scalar = value + sa.literal_column("0e0")
    else:
        scalar = value == sa.literal_column("'true'")
    return sa.case((found, scalar), else_=sa.null())
