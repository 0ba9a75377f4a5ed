"""Statements with parameters that differ per message, sent as one statement per batch.

On PostgreSQL the rows travel as one JSON document read by `json_to_recordset(...) AS b(...)`:
one fixed statement text (prepared once by the driver), one round trip and one plan per batch,
whatever its size. Engines without it (SQLite, in-process) run the same statement once per
message (executemany), with the columns as scalar parameters. A JSON value of None is SQL
NULL on both paths. A statement built for exactly one row (`one_row`) takes scalar parameters on
every engine: the single enqueue on PostgreSQL, without a JSON document to encode and parse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from .parts import SqlParts


class PerRow:
    def __init__(
        self,
        dialect: SqlParts,
        columns: Sequence[sa.ColumnClause[Any]],
        arrays: bool = False,
        one_row: bool = False,
    ) -> None:
        """`arrays`: the source of `dialect.per_row_arrays` (only for statements the dialect
        executes itself, with its own parameters); `params` is then the default source's.
        `one_row`: no source, scalar parameters (a statement for exactly one row)."""
        columns = [_none_as_null(c) for c in columns]
        self.dialect = dialect
        self.columns = columns
        self.source = (
            None
            if one_row
            else dialect.per_row_arrays(columns)
            if arrays
            else dialect.per_row(columns)
        )
        self.c: dict[str, sa.ColumnElement[Any]]
        if self.source is None:
            self.c = {c.name: sa.bindparam(c.name, type_=c.type) for c in columns}
        else:
            self.c = {c.name: self.source.c[c.name] for c in columns}

    def params(
        self, rows: Sequence[dict[str, Any]], shared: dict[str, Any] | None = None
    ) -> dict[str, Any] | list[dict[str, Any]]:
        """The parameters of one execution: all rows in one, or one dict per row."""
        shared = shared or {}
        if self.source is None:
            return [row | shared for row in rows]
        return self.dialect.per_row_parameters(rows) | shared


def _none_as_null(column: sa.ColumnClause[Any]) -> sa.ColumnClause[Any]:
    if isinstance(column.type, sa.JSON):
        return sa.column(column.name, type(column.type)(none_as_null=True))
    return column
