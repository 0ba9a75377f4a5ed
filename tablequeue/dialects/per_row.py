"""Statements with parameters that differ per message, sent as one statement per batch.

On PostgreSQL the rows travel as one JSON document read by `json_to_recordset(...) AS b(...)`:
one fixed statement text (prepared once by the driver), one round trip and one plan per batch,
whatever its size. Engines without it (SQLite, in-process) run the same statement once per
message (executemany), with the columns as scalar parameters. A JSON value of None is SQL
NULL on both paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import sqlalchemy as sa


class PerRowSource(Protocol):
    """What a dialect supplies for per-row parameters."""

    def per_row(self, columns: Sequence[sa.ColumnClause[Any]]) -> sa.TableValuedAlias | None:
        """A FROM source with one row per message, read from one parameter holding every row,
        or None: then statements run once per message (executemany) with scalar parameters."""

    def per_row_parameters(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The parameter(s) `per_row`'s source reads: one dict of column values per message."""

    def per_row_arrays(self, columns: Sequence[sa.ColumnClause[Any]]) -> sa.TableValuedAlias | None:
        """`per_row` for a statement the dialect runs itself (its `enqueue_round`), which may
        read one array per column instead (PostgreSQL); by default `per_row`'s source."""


class PerRow:
    def __init__(
        self, dialect: PerRowSource, columns: Sequence[sa.ColumnClause[Any]], arrays: bool = False
    ) -> None:
        """`arrays`: the source of `dialect.per_row_arrays` (only for statements the dialect
        executes itself, with its own parameters); `params` is then the default source's."""
        columns = [_none_as_null(c) for c in columns]
        self.dialect = dialect
        self.columns = columns
        self.source = dialect.per_row_arrays(columns) if arrays else dialect.per_row(columns)
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
