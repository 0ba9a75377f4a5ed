"""Indexes on JSON body paths (`spec.indexes`): the two strategies engines build on (each
engine's package holds its own, in `json_index.py`).

- `ExpressionIndexes` (PostgreSQL, SQLite): an index on exactly the expression the predicate
  compiler reads a typed value with (`Dialect.json_scalar`, the path written as a literal).
  PostgreSQL builds it with `CREATE INDEX CONCURRENTLY` on a connection of its own (outside a
  transaction; writers are never blocked) and rebuilds one a failed build left invalid.
- `ColumnIndexes` (MariaDB, SQL Server): a generated column `tqx_...` (MariaDB: VIRTUAL, since
  MariaDB 10.11 has no functional indexes; SQL Server: a PERSISTED computed column) and an
  index on it. The column is a *superset key*: every row the predicate matches has the key the
  compiler derives from the value, and the exact predicate is checked as well.

Queries compare `indexed(...)` with `key(...)` (see `predicate.to_sql`) and keep the exact
comparison beside it, so an index only ever narrows what the database reads.

Every name is `tqx_...` (validated by `tablequeue.indexes`), so apply drops only what it made.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from .parts import SqlParts
from .types import JsonKind

PREFIX = "tqx_"
"""Names of the indexes (and, on MariaDB and SQL Server, generated columns) apply manages."""


@dataclass(frozen=True)
class JsonIndex:
    """One index of `spec.indexes`, resolved: its name, path and the JSON kind it holds."""

    name: str
    path: tuple[str | int, ...]
    kind: JsonKind


def _sql_dialect(where: Any) -> sa.engine.Dialect:
    """The SQLAlchemy dialect of an engine, a connection, or the dialect itself."""
    return where if isinstance(where, sa.engine.Dialect) else where.dialect


def compiled(expression: sa.ColumnElement[Any], where: Any) -> str:
    """The SQL text of an expression with every value written as a literal: the paths are
    validated by `tablequeue.indexes` (names, indexes and plain quoted keys only)."""
    sql = expression.compile(dialect=_sql_dialect(where), compile_kwargs={"literal_binds": True})
    return str(sql)


def quote(where: Any, name: str) -> str:
    """`name` quoted as an identifier of the engine `where` belongs to."""
    return str(_sql_dialect(where).identifier_preparer.quote(name))


class JsonIndexes:
    """What differs between engines when indexing a JSON path."""

    concurrently = False
    """Built outside apply's transaction, while writers go on (PostgreSQL)."""
    max_path_steps: int | None = None
    """The most steps of a path this engine reads (apply refuses longer ones first)."""
    undone_on_failure = False
    """DDL that commits at once (MariaDB): when one index cannot be made, apply drops those it
    made before it, which no rollback undoes and no registry names."""

    def __init__(self, dialect: SqlParts) -> None:
        self.dialect = dialect

    @contextlib.contextmanager
    def ddl_connection(self, engine: Engine, wait_seconds: float) -> Iterator[Connection]:
        """Where apply creates and drops the indexes (after the table's own transaction)."""
        with engine.begin() as connection:
            yield connection

    def existing(self, connection: Connection, table_name: str) -> dict[str, bool]:
        """tablequeue's JSON indexes on the table: name -> usable (False: a failed build)."""
        indexes = sa.inspect(connection).get_indexes(table_name)
        return {str(i["name"]): True for i in indexes if (i["name"] or "").startswith(PREFIX)}

    def create_statements(self, where: Any, table_name: str, index: JsonIndex) -> list[str]:
        raise NotImplementedError

    def drop_statements(self, where: Any, table_name: str, name: str) -> list[str]:
        raise NotImplementedError

    def indexed(self, where: Any, table: sa.Table, index: JsonIndex) -> sa.ColumnElement[Any]:
        """What a query compares with `key` to use the index."""
        raise NotImplementedError

    def key(
        self, index: JsonIndex, op: str, value: Any
    ) -> tuple[str, sa.ColumnElement[Any]] | None:
        """`(op, key)` such that `indexed op key` holds for every row where `path op value`
        holds, or None when the index cannot narrow this comparison."""
        raise NotImplementedError


class ExpressionIndexes(JsonIndexes):
    """An index on the predicate's own expression, `json_scalar` with a literal path (SQLite)."""

    def expression(self, column: sa.ColumnElement[Any], index: JsonIndex) -> sa.ColumnElement[Any]:
        return self.dialect.json_scalar(column, index.path, index.kind)

    def create_statements(self, where: Any, table_name: str, index: JsonIndex) -> list[str]:
        expression = compiled(self.expression(sa.column("message"), index), where)
        how = "CONCURRENTLY " if self.concurrently else ""
        return [
            f"CREATE INDEX {how}IF NOT EXISTS {quote(where, index.name)} "
            f"ON {quote(where, table_name)} (({expression}))"
        ]

    def drop_statements(self, where: Any, table_name: str, name: str) -> list[str]:
        how = "CONCURRENTLY " if self.concurrently else ""
        return [f"DROP INDEX {how}IF EXISTS {quote(where, name)}"]

    def indexed(self, where: Any, table: sa.Table, index: JsonIndex) -> sa.ColumnElement[Any]:
        return sa.literal_column(compiled(self.expression(table.c.message, index), where))

    def key(
        self, index: JsonIndex, op: str, value: Any
    ) -> tuple[str, sa.ColumnElement[Any]] | None:
        if index.kind == "number":
            return op, sa.literal(value, sa.BigInteger() if isinstance(value, int) else sa.Float())
        return op, sa.literal(value, sa.Text() if index.kind == "string" else sa.Boolean())


class ColumnIndexes(JsonIndexes):
    """A generated column `tqx_...` holding a key of the value, and an index on it."""

    def existing(self, connection: Connection, table_name: str) -> dict[str, bool]:
        columns = sa.inspect(connection).get_columns(table_name)
        return {str(c["name"]): True for c in columns if str(c["name"]).startswith(PREFIX)}

    def indexed(self, where: Any, table: sa.Table, index: JsonIndex) -> sa.ColumnElement[Any]:
        return sa.literal_column(f"{quote(where, table.name)}.{quote(where, index.name)}")
