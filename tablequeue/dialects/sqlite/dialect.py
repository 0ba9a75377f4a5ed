"""SQLite: one writer at a time, so every transaction is BEGIN IMMEDIATE; WAL for readers.

Timestamps are ISO text in SQLAlchemy's storage format (`YYYY-MM-DD HH:MM:SS.ffffff`, UTC), and
SQL-side clock values are produced in exactly that format so that text comparison orders them.
"""

import os
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.sqlite.base import SQLiteCompiler
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.selectable import Select

from ...errors import InvalidInput
from ..on_conflict import OnConflictDialect
from ..types import Capabilities, JsonKind, JsonPath, path_text
from .json_index import SqliteIndexes

_TYPES: dict[JsonKind, tuple[str, ...]] = {
    "string": ("text",),
    "number": ("integer", "real"),
    "boolean": ("true", "false"),
}
_CLOCK_FORMAT = "%Y-%m-%d %H:%M:%f"
_BUSY_TIMEOUT_MS = 30_000


def _path(path: JsonPath) -> sa.BindParameter[str]:
    """A JSON path like `$."Product"."Sku"[0]`, bound as one parameter (`path_text`)."""
    return sa.bindparam(None, path_text(path), type_=sa.Text)


def _sql(text: str) -> sa.ColumnElement[Any]:
    # Constants of our own, written as SQL text rather than bound: SQLite's positional parameters
    # must all belong to the rows of a multi-row INSERT for SQLAlchemy to batch it.
    return sa.literal_column(text)


def _clock(*modifiers: sa.ColumnElement[Any]) -> sa.ColumnElement[datetime]:
    # strftime's %f has milliseconds; pad to the microseconds of the storage format.
    text = sa.func.strftime(_sql(f"'{_CLOCK_FORMAT}'"), _sql("'now'"), *modifiers)
    return sa.type_coerce(text.op("||")(_sql("'000'")), sa.DateTime())


class _HintingCompiler(SQLiteCompiler):
    """Renders table hints (`INDEXED BY`), which SQLAlchemy's SQLite compiler drops."""

    def get_from_hint_text(self, table: Any, text: str | None) -> str | None:
        return text


class SqliteDialect(OnConflictDialect):
    """The shared statements, run once per message (in-process: no round trips to save).
    BEGIN IMMEDIATE already serializes writers (DDL included); deleted rows' pages go to
    SQLite's free list and are reused (no vacuum); workers poll (no notifications)."""

    name = "sqlite"
    url_schemes = {"sqlite": "sqlite", "sqlite+pysqlite": "sqlite"}
    url_hint = "sqlite:///"
    capabilities = Capabilities(
        notifies=False, estimates_counts=False, vacuums=False, one_writer=True
    )
    json_type: sa.types.TypeEngine[Any] = sqlite.JSON()
    json_index_strategy = SqliteIndexes
    # A multi-row VALUES costs SQLite more per row the more rows it has (its registry lookup
    # per row): 1,000 messages enqueued ~58 µs/msg of CPU in pages of 1,000, ~39 in pages of
    # 100 (all pages in the batch's one transaction; results are matched by tracking id).
    enqueue_page_rows = 100

    def check_url(self, url: sa.URL) -> None:
        """Differs because a SQLite database without a file (no name, or `:memory:`) belongs
        to the one connection that opened it: other connections, workers and processes would
        each get an empty database of their own."""
        if url.database in (None, "", ":memory:"):
            raise InvalidInput(
                "an in-memory SQLite database cannot be shared: use sqlite:///FILE.db"
            )

    def id_column(self) -> sa.Column[int]:
        """Differs because SQLite assigns ids only to an INTEGER PRIMARY KEY, an alias of the
        64-bit rowid (AUTOINCREMENT, `table_options`, is allowed on no other key), and renders
        no IDENTITY: the shared BIGINT key would get no value."""
        return sa.Column("id", sa.Integer(), primary_key=True)

    def table_options(self) -> dict[str, Any]:
        """Differs because without AUTOINCREMENT SQLite gives a new row the largest rowid plus
        one, which reuses the id of the newest message once it is deleted; with it ids are
        never reused (as `id_column` promises)."""
        return {"sqlite_autoincrement": True}

    def configure_engine(self, engine: Engine) -> None:
        """Differs because SQLite has one writer at a time and Python's sqlite3 begins
        transactions its own way: every transaction is BEGIN IMMEDIATE, taking the write lock
        at once (a deferred transaction that read first can fail to become the writer with
        SQLITE_BUSY, which busy_timeout does not wait out); a writer waits up to 30 s for the
        lock instead of failing at once; WAL lets readers run beside the writer, and with WAL
        synchronous NORMAL stays consistent without a sync per commit. The lease's INDEXED BY
        needs `_HintingCompiler`: SQLAlchemy's SQLite compiler drops table hints."""
        engine.dialect.statement_compiler = _HintingCompiler

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            # Take transaction control away from the sqlite3 module so BEGIN IMMEDIATE is ours.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(connection: Connection) -> None:
            connection.exec_driver_sql("BEGIN IMMEDIATE")

    def now(self) -> sa.ColumnElement[datetime]:
        return _clock()

    def seconds_from_now(self, seconds: sa.ColumnElement[Any]) -> sa.ColumnElement[datetime]:
        rounded = sa.func.round(seconds, _sql("3"))
        modifier = sa.cast(rounded, sa.Text).op("||")(_sql("' seconds'"))
        return _clock(modifier)

    def json_scalar(
        self, column: sa.ColumnElement[Any], path: JsonPath, kind: JsonKind
    ) -> sa.ColumnElement[Any]:
        json_type = sa.func.json_type(column, _path(path))
        if kind == "boolean":
            return sa.case((json_type == "true", True), (json_type == "false", False))
        return sa.case(
            (json_type.in_(_TYPES[kind]), sa.func.json_extract(column, _path(path))),
            else_=sa.null(),
        )

    def json_is_null(self, column: sa.ColumnElement[Any], path: JsonPath) -> sa.ColumnElement[bool]:
        return sa.func.coalesce(sa.func.json_type(column, _path(path)), "null") == "null"

    def insert(self, table: sa.Table) -> Insert:
        return sqlite.insert(table)

    def lock_candidates(self, select: Select[Any], lease_index: str) -> Select[Any]:
        # BEGIN IMMEDIATE already made this transaction the only writer. Without statistics
        # SQLite's planner may prefer the status index and sort the whole backlog per lease.
        table = select.get_final_froms()[0]
        return select.with_hint(table, f'INDEXED BY "{lease_index}"', "sqlite")

    def identity(self, connection: Connection) -> tuple[Any, ...]:
        files = {row[1]: row[2] for row in connection.exec_driver_sql("PRAGMA database_list")}
        return (os.path.realpath(files.get("main") or ":memory:"),)

    def autocommits(self, dbapi_connection: Any) -> bool:
        # sqlite3: isolation_level None (or Python 3.12's autocommit=True) commits each
        # statement unless a BEGIN is open; the legacy default begins before a write itself.
        if dbapi_connection.in_transaction:
            return False
        return (
            dbapi_connection.isolation_level is None
            or getattr(dbapi_connection, "autocommit", None) is True
        )


DIALECT = SqliteDialect()
