"""MariaDB's JSON indexes: a VIRTUAL generated column holding a key of the value, indexed."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ..json_index import ColumnIndexes, JsonIndex, compiled, quote
from .json_paths import MARIADB_PATH_STEPS, typed_value

MARIADB_KEY_BYTES = 3072
"""InnoDB's longest index key: text values are indexed by their first 3,072 bytes."""
_MARIADB_TYPES = {"string": "BLOB", "number": "DOUBLE"}


class MariaDbIndexes(ColumnIndexes):
    """A VIRTUAL column holding the typed value at the path, as predicates read it but along
    MariaDB's lax path (`json_paths`): a superset key, and the path is written twice, not once
    per index step, as the strict value would. Text is held as its first 3,072 bytes (a prefix
    sorts at or before the whole value), in a BLOB indexed whole.

    What fits: MariaDB keeps a table's definition, column expressions included, in 64 KiB, and
    counts every column but a BLOB (virtual ones too) in a row's 65,535 bytes. Apply adds the
    new columns before it drops the old: 32 of the longest paths may be there at once."""

    undone_on_failure = True
    max_path_steps = MARIADB_PATH_STEPS

    def create_statements(self, where: Any, table_name: str, index: JsonIndex) -> list[str]:
        value = typed_value(sa.column("message"), index.path, index.kind, strict=False)
        table, name = quote(where, table_name), quote(where, index.name)
        key = name
        if index.kind == "string":
            value = sa.func.left(value, sa.literal_column(str(MARIADB_KEY_BYTES)))
            key = f"{name}({MARIADB_KEY_BYTES})"
        return [
            f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {name}"
            f" {_MARIADB_TYPES.get(index.kind, 'BOOLEAN')} AS ({compiled(value, where)}) VIRTUAL,"
            f" ADD INDEX IF NOT EXISTS {name} ({key})"
        ]

    def drop_statements(self, where: Any, table_name: str, name: str) -> list[str]:
        quoted = quote(where, name)
        return [f"ALTER TABLE {quote(where, table_name)} DROP COLUMN IF EXISTS {quoted}"]

    def key(
        self, index: JsonIndex, op: str, value: Any
    ) -> tuple[str, sa.ColumnElement[Any]] | None:
        if index.kind != "string":
            return op, sa.literal(value)
        as_bytes = sa.cast(sa.literal(value, sa.Text()), sa.LargeBinary())
        prefix = sa.func.left(as_bytes, sa.literal_column(str(MARIADB_KEY_BYTES)))
        return {"<": "<=", ">": ">="}.get(op, op), prefix
