"""PostgreSQL's JSON indexes: expression indexes built CONCURRENTLY, one apply at a time."""

from __future__ import annotations

import contextlib
import time
import zlib
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ...errors import IndexBuildBusy, InvalidInput
from ..json_index import PREFIX, ExpressionIndexes, JsonIndex, quote

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
            {"table": quote(connection, table_name), "prefix": PREFIX},
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
