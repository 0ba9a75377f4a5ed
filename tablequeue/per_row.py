"""Statements with parameters that differ per message, sent as one statement per batch.

On PostgreSQL the rows travel as one JSON document read by `json_to_recordset(...) AS b(...)`:
one fixed statement text (prepared once by the driver), one round trip and one plan per batch,
whatever its size. Engines without it (SQLite, in-process) run the same statement once per
message (executemany), with the columns as scalar parameters. JSON values travel as their
canonical text and are cast back in SQL, so JSON null stays JSON null.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from .dialects import Dialect
from .models import canonical_json


class PerRow:
    def __init__(self, dialect: Dialect, columns: Sequence[sa.ColumnClause[Any]]) -> None:
        self.dialect = dialect
        self.json = {c.name for c in columns if isinstance(c.type, sa.JSON)}
        as_text = [sa.column(c.name, sa.Text()) if c.name in self.json else c for c in columns]
        self.source = dialect.per_row(as_text)
        self.c: dict[str, sa.ColumnElement[Any]]
        if self.source is None:
            self.c = {c.name: sa.bindparam(c.name, type_=c.type) for c in columns}
        else:
            source = self.source
            self.c = {
                c.name: sa.cast(source.c[c.name], c.type)
                if c.name in self.json
                else source.c[c.name]
                for c in columns
            }

    def params(
        self, rows: Sequence[dict[str, Any]], shared: dict[str, Any] | None = None
    ) -> dict[str, Any] | list[dict[str, Any]]:
        """The parameters of one execution: all rows in one, or one dict per row."""
        shared = shared or {}
        if self.source is None:
            return [row | shared for row in rows]
        if self.json:
            rows = [
                {k: canonical_json(v) if k in self.json else v for k, v in row.items()}
                for row in rows
            ]
        return self.dialect.per_row_parameters(rows) | shared
