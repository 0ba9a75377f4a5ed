"""PostgreSQL's per-row parameters of the enqueue statement: one typed array per column.

`unnest(%(b_message_id)b::VARCHAR(400)[], ..., CAST(%(b_message)b::TEXT[] AS JSONB[]), ...)
AS b(b_message_id, ...)`: psycopg sends each column as one array in PostgreSQL's binary format
(a length and the bytes of each value: no quoting or escaping on either side, ~0.2 µs a value
in psycopg's C dumpers) and PostgreSQL reads the values without parsing a JSON document row by
row, as `json_to_recordset` did (~4 µs of the server's CPU per message less). A JSON value
travels as its text and is read as jsonb. A column that is NULL in every row of a batch is sent
as one NULL (unnest pads a missing array with NULLs), so the usual batch sends the body, the
tracking id and three small scalars per message. The casts to `VARCHAR(n)[]` would truncate
(an explicit cast) where a column refuses: safe because `NewMessage` caps each such value at
the column's length first.

psycopg would send a list in text format for a `%s` placeholder (an array literal it builds
with a regular expression per value: ~25 µs for a 150-byte body), so the statement runs with
`%(name)b` placeholders for the arrays, on the driver: `connection.exec_driver_sql` inside a
transaction (SQLAlchemy's error handling and pool invalidation kept), a psycopg cursor in
autocommit (`enqueue_autocommit`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg


def unnest(columns: Sequence[sa.ColumnClause[Any]]) -> sa.TableValuedAlias:
    """The FROM source: one array parameter per column (named as the column)."""
    arrays: list[sa.ColumnElement[Any]] = []
    for column in columns:
        if isinstance(column.type, sa.JSON):
            text = sa.bindparam(column.name, type_=pg.ARRAY(sa.Text()))
            arrays.append(sa.cast(text, pg.ARRAY(pg.JSONB())))
        else:
            arrays.append(sa.bindparam(column.name, type_=pg.ARRAY(column.type)))
    return sa.func.unnest(*arrays).table_valued(*columns).render_derived("b")


def json_columns(columns: Sequence[sa.ColumnClause[Any]]) -> frozenset[str]:
    return frozenset(c.name for c in columns if isinstance(c.type, sa.JSON))


def binary_placeholders(sql: str, names: Sequence[str]) -> str:
    """The driver's text with `%(name)b` (binary format) for the array parameters."""
    for name in names:
        placeholder = f"%({name})s"
        assert placeholder in sql, placeholder
        sql = sql.replace(placeholder, f"%({name})b")
    return sql


def parameters(
    rows: Sequence[dict[str, Any]], json_names: frozenset[str], encode: Callable[[Any], str]
) -> dict[str, Any]:
    """One list per column (JSON values as their text), or None for a column that is None in
    every row."""
    out: dict[str, Any] = {}
    for name in rows[0]:
        values = [row[name] for row in rows]
        if name in json_names:
            values = [None if value is None else encode(value) for value in values]
        out[name] = values if any(value is not None for value in values) else None
    return out


_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
"""Made once: `json.dumps` with options makes an encoder per call (~0.6 µs)."""


def encode_json(value: Any) -> str:
    """A JSON value's text for a jsonb array element (jsonb keeps no formatting)."""
    return _ENCODER.encode(value)
