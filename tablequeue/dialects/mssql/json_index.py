"""SQL Server's JSON indexes: a PERSISTED computed column of `JSON_VALUE`, indexed."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..json_index import ColumnIndexes, JsonIndex, compiled, quote
from ..types import path_text

MSSQL_KEY_CHARACTERS = 450
"""SQL Server's nonclustered index keys hold 1,700 bytes: text is indexed by 450 characters."""
MSSQL_JSON_VALUE_CHARACTERS = 4000
"""JSON_VALUE (lax) gives NULL for a longer string: such values have no key."""


class MssqlIndexes(ColumnIndexes):
    """`JSON_VALUE` in a PERSISTED computed column: the text of any scalar at the path, so a
    string "5" and a number 5 share a key (the exact comparison tells them apart)."""

    def create_statements(
        self, engine: Engine | sa.engine.Dialect, table_name: str, index: JsonIndex
    ) -> list[str]:
        path = compiled(sa.literal(path_text(index.path), sa.Unicode()), engine)
        value = f"JSON_VALUE(message, {path})"
        expression = {
            "string": f"CAST(LEFT({value}, {MSSQL_KEY_CHARACTERS})"
            f" AS NVARCHAR({MSSQL_KEY_CHARACTERS}))",
            "number": f"TRY_CAST({value} AS FLOAT)",
            "boolean": f"CAST(CASE {value} WHEN 'true' THEN 1 WHEN 'false' THEN 0 END AS BIT)",
        }[index.kind]
        table, name = quote(engine, table_name), quote(engine, index.name)
        return [
            f"ALTER TABLE {table} ADD {name} AS ({expression}) PERSISTED",
            f"CREATE INDEX {name} ON {table} ({name})",
        ]

    def drop_statements(
        self, engine: Engine | sa.engine.Dialect, table_name: str, name: str
    ) -> list[str]:
        table, quoted = quote(engine, table_name), quote(engine, name)
        return [
            f"DROP INDEX IF EXISTS {quoted} ON {table}",
            f"ALTER TABLE {table} DROP COLUMN IF EXISTS {quoted}",
        ]

    def key(
        self, index: JsonIndex, op: str, value: Any
    ) -> tuple[str, sa.ColumnElement[Any]] | None:
        if index.kind == "number":
            return op, sa.literal(value, sa.Float())
        if index.kind == "boolean":
            return (op, sa.literal(1 if value else 0)) if op == "==" else None
        # Collations may ignore case and JSON_VALUE drops long strings: equality only.
        if op != "==" or len(str(value)) > MSSQL_JSON_VALUE_CHARACTERS:
            return None
        return op, sa.func.left(sa.literal(value, sa.Unicode()), MSSQL_KEY_CHARACTERS)
