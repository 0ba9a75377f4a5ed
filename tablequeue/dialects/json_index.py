"""Indexes on JSON body paths (`spec.indexes`), per engine.

Two strategies:
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
import json
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ..errors import IndexBuildBusy, InvalidInput
from .base import JsonKind, JsonPath
from .mysql_json import typed_value

if TYPE_CHECKING:
    from .sql import SqlDialect

PREFIX = "tqx_"
"""Names of the indexes (and, on MariaDB and SQL Server, generated columns) apply manages."""


@dataclass(frozen=True)
class JsonIndex:
    """One index of `spec.indexes`, resolved: its name, path and the JSON kind it holds."""

    name: str
    path: tuple[str | int, ...]
    kind: JsonKind


def path_text(path: JsonPath) -> str:
    """`$."Product"."Sku"[0]`: keys quoted, as every engine's JSON path syntax accepts."""
    return "$" + "".join(
        f"[{segment}]" if isinstance(segment, int) else "." + json.dumps(segment)
        for segment in path
    )


def _sql_dialect(where: Any) -> sa.engine.Dialect:
    """The SQLAlchemy dialect of an engine, a connection, or the dialect itself."""
    return where if isinstance(where, sa.engine.Dialect) else where.dialect


def compiled(expression: sa.ColumnElement[Any], where: Any) -> str:
    """The SQL text of an expression with every value written as a literal: the paths are
    validated by `tablequeue.indexes` (names, indexes and plain quoted keys only)."""
    sql = expression.compile(dialect=_sql_dialect(where), compile_kwargs={"literal_binds": True})
    return str(sql)


def _quote(where: Any, name: str) -> str:
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

    def __init__(self, dialect: SqlDialect) -> None:
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
            f"CREATE INDEX {how}IF NOT EXISTS {_quote(where, index.name)} "
            f"ON {_quote(where, table_name)} (({expression}))"
        ]

    def drop_statements(self, where: Any, table_name: str, name: str) -> list[str]:
        how = "CONCURRENTLY " if self.concurrently else ""
        return [f"DROP INDEX {how}IF EXISTS {_quote(where, name)}"]

    def indexed(self, where: Any, table: sa.Table, index: JsonIndex) -> sa.ColumnElement[Any]:
        return sa.literal_column(compiled(self.expression(table.c.message, index), where))

    def key(
        self, index: JsonIndex, op: str, value: Any
    ) -> tuple[str, sa.ColumnElement[Any]] | None:
        if index.kind == "number":
            return op, sa.literal(value, sa.BigInteger() if isinstance(value, int) else sa.Float())
        return op, sa.literal(value, sa.Text() if index.kind == "string" else sa.Boolean())


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


_DDL_LOCK = zlib.crc32(b"tablequeue:json-indexes")


class PostgresIndexes(ExpressionIndexes):
    """CREATE INDEX CONCURRENTLY: writers go on while a big table is indexed."""

    concurrently = True

    @contextlib.contextmanager
    def ddl_connection(self, engine: Engine, wait_seconds: float) -> Iterator[Connection]:
        """Outside a transaction, as CONCURRENTLY must be; indexing a big table may take longer
        than the statement timeout of ordinary statements. One apply at a time builds: a
        session lock, taken by polling, since a session waiting for it inside a statement
        would hold a snapshot that CREATE INDEX CONCURRENTLY waits for.

        Behind a transaction pooler (`?pooler=transaction`) the lock and the timeout would
        land on other server connections: the indexes are only compared there, and an apply
        that must build or drop one is refused (apply over a direct URL)."""
        with engine.connect() as connection:
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
            if getattr(self.dialect, "pooler", None) is not None:
                yield connection.execution_options(tablequeue_no_ddl=True)
                return
            lock = sa.text("SELECT pg_try_advisory_lock(:key)").bindparams(key=_DDL_LOCK)
            deadline = time.monotonic() + wait_seconds
            while not connection.execute(lock).scalar():
                if time.monotonic() >= deadline:
                    raise IndexBuildBusy(
                        "another apply is building indexes on this database"
                        f" (waited {wait_seconds:g} s); apply again later"
                    )
                time.sleep(0.5)
            connection.exec_driver_sql("SET statement_timeout = 0")
            try:
                yield connection
            finally:
                connection.exec_driver_sql("RESET statement_timeout")
                connection.execute(
                    sa.text("SELECT pg_advisory_unlock(:key)").bindparams(key=_DDL_LOCK)
                )

    def create_statements(self, where: Any, table_name: str, index: JsonIndex) -> list[str]:
        _refuse_behind_pooler(where)
        return super().create_statements(where, table_name, index)

    def drop_statements(self, where: Any, table_name: str, name: str) -> list[str]:
        _refuse_behind_pooler(where)
        return super().drop_statements(where, table_name, name)

    def existing(self, connection: Connection, table_name: str) -> dict[str, bool]:
        """A build that failed (or was interrupted) leaves an invalid index: it is rebuilt."""
        rows = connection.execute(
            sa.text(
                "SELECT c.relname, i.indisvalid FROM pg_index i"
                " JOIN pg_class c ON c.oid = i.indexrelid"
                " WHERE i.indrelid = CAST(:table AS regclass) AND starts_with(c.relname, :prefix)"
            ),
            {"table": _quote(connection, table_name), "prefix": PREFIX},
        )
        return {str(name): bool(valid) for name, valid in rows}

    def key(
        self, index: JsonIndex, op: str, value: Any
    ) -> tuple[str, sa.ColumnElement[Any]] | None:
        if index.kind == "number" and not isinstance(value, int):
            # numeric = float8 compares as float8: no index on a numeric expression serves it.
            return None
        return super().key(index, op, value)


def _refuse_behind_pooler(where: Any) -> None:
    if isinstance(where, Connection) and where.get_execution_options().get("tablequeue_no_ddl"):
        raise InvalidInput(
            "building or dropping JSON indexes (spec.indexes) needs a direct connection to "
            "PostgreSQL, not one through a transaction pooler (?pooler=transaction): apply "
            "the queue with a direct URL"
        )


class ColumnIndexes(JsonIndexes):
    """A generated column `tqx_...` holding a key of the value, and an index on it."""

    def existing(self, connection: Connection, table_name: str) -> dict[str, bool]:
        columns = sa.inspect(connection).get_columns(table_name)
        return {str(c["name"]): True for c in columns if str(c["name"]).startswith(PREFIX)}

    def indexed(self, where: Any, table: sa.Table, index: JsonIndex) -> sa.ColumnElement[Any]:
        return sa.literal_column(f"{_quote(where, table.name)}.{_quote(where, index.name)}")


MARIADB_KEY_BYTES = 3072
"""InnoDB's longest index key: text values are indexed by their first 3,072 bytes."""
MARIADB_PATH_STEPS = 31
"""MariaDB's JSON path depth limit is 32, `$` included: a longer path reads NULL with a
warning, which an INSERT computing the generated column turns into an error."""
_MARIADB_TYPES = {"string": "BLOB", "number": "DOUBLE"}


class MariaDbIndexes(ColumnIndexes):
    """A VIRTUAL column holding the typed value at the path, as predicates read it but along
    MariaDB's lax path (`mysql_json`): a superset key, and the path is written twice, not once
    per index step, as the strict value would. Text is held as its first 3,072 bytes (a prefix
    sorts at or before the whole value), in a BLOB indexed whole.

    What fits: MariaDB keeps a table's definition, column expressions included, in 64 KiB, and
    counts every column but a BLOB (virtual ones too) in a row's 65,535 bytes. Apply adds the
    new columns before it drops the old: 32 of the longest paths may be there at once."""

    undone_on_failure = True
    max_path_steps = MARIADB_PATH_STEPS

    def create_statements(self, where: Any, table_name: str, index: JsonIndex) -> list[str]:
        value = typed_value(sa.column("message"), index.path, index.kind, strict=False)
        table, name = _quote(where, table_name), _quote(where, index.name)
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
        quoted = _quote(where, name)
        return [f"ALTER TABLE {_quote(where, table_name)} DROP COLUMN IF EXISTS {quoted}"]

    def key(
        self, index: JsonIndex, op: str, value: Any
    ) -> tuple[str, sa.ColumnElement[Any]] | None:
        if index.kind != "string":
            return op, sa.literal(value)
        as_bytes = sa.cast(sa.literal(value, sa.Text()), sa.LargeBinary())
        prefix = sa.func.left(as_bytes, sa.literal_column(str(MARIADB_KEY_BYTES)))
        return {"<": "<=", ">": ">="}.get(op, op), prefix


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
        table, name = _quote(engine, table_name), _quote(engine, index.name)
        return [
            f"ALTER TABLE {table} ADD {name} AS ({expression}) PERSISTED",
            f"CREATE INDEX {name} ON {table} ({name})",
        ]

    def drop_statements(
        self, engine: Engine | sa.engine.Dialect, table_name: str, name: str
    ) -> list[str]:
        table, quoted = _quote(engine, table_name), _quote(engine, name)
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
