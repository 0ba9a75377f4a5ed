"""SQLite's JSON indexes: on the predicate's own expression (`ExpressionIndexes`)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..json_index import PREFIX, ExpressionIndexes


class SqliteIndexes(ExpressionIndexes):
    def existing(self, connection: Connection, table_name: str) -> dict[str, bool]:
        # SQLAlchemy does not reflect expression indexes of SQLite: ask the schema table.
        rows = connection.execute(
            sa.text(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = :table"
                " AND substr(name, 1, length(:prefix)) = :prefix"
            ),
            {"table": table_name, "prefix": PREFIX},
        )
        return {str(name): True for (name,) in rows}
