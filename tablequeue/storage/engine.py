"""One database: its engine and pool, transactions, and the queue tables it knows."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ..dialects import Dialect
from ..dialects.queries import Queries
from ..errors import DatabaseUnavailable
from ..models import canonical_json
from .history import HistoryTables, history_tables
from .schedules import schedules_table
from .schema import queue_table, registry_table
from .timeouts import DatabaseTimeouts
from .urls import dialect_for_url, shown_url

PING_AFTER_IDLE_SECONDS = 1.0


def _ping_when_idle(engine: Engine) -> None:
    """Test a pooled connection before use when it sat idle (the database may have restarted
    meanwhile); a dead one is replaced. Busy connections skip the round trip that SQLAlchemy's
    pool_pre_ping would spend on every transaction."""

    @sa.event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @sa.event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_SECONDS:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as error:
            raise sa.exc.DisconnectionError(str(error)) from error  # the pool reconnects


def _first_line(error: BaseException) -> str:
    text = str(getattr(error, "orig", None) or error).strip()
    return text.splitlines()[0].strip() if text else type(error).__name__


class Storage:
    """A database that holds queues: one engine, one dialect, the registry table, and the
    statements of each queue table (built once per table)."""

    def __init__(
        self, url: str, timeouts: DatabaseTimeouts | None = None, **engine_options: Any
    ) -> None:
        self.dialect: Dialect
        self.dialect, self.url = dialect_for_url(url)
        self.shown_url = shown_url(url)
        self.timeouts = timeouts or DatabaseTimeouts.from_environment()
        options: dict[str, Any] = {"json_serializer": canonical_json}
        connect_args = self.dialect.connect_args(
            self.url, self.timeouts.connect_seconds, self.timeouts.statement_seconds
        )
        options["connect_args"] = connect_args | engine_options.pop("connect_args", {})
        options.update(engine_options)
        self.engine: Engine = sa.create_engine(self.url, **options)
        _ping_when_idle(self.engine)
        self.dialect.configure_engine(self.engine)
        self.metadata = sa.MetaData()
        self.registry = registry_table(self.metadata)
        self.history: HistoryTables = history_tables(self.metadata, self.dialect)
        """The shared tables of results, attempts and the housekeeping lease."""
        self.schedules = schedules_table(self.metadata)
        self._tables: dict[str, sa.Table] = {}
        self._tables_lock = threading.Lock()
        self.statements: dict[str, Queries] = {}
        """The hot statements of each queue table, by table name."""

    def close(self) -> None:
        self.engine.dispose()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction; an unreachable database becomes one clear DatabaseUnavailable."""
        try:
            connection = self.engine.connect()
        except sa.exc.DBAPIError as error:
            raise DatabaseUnavailable(
                f"cannot connect to {self.shown_url}: {_first_line(error)}"
            ) from None
        try:
            with connection.begin():
                yield connection
        except sa.exc.DBAPIError as error:
            if error.connection_invalidated:
                raise DatabaseUnavailable(
                    f"lost connection to {self.shown_url}: {_first_line(error)}"
                ) from error
            if self.dialect.statement_cancelled(error.orig or error):
                raise DatabaseUnavailable(
                    f"{self.shown_url} cancelled a statement: {_first_line(error)}"
                ) from error
            raise
        finally:
            connection.close()

    def ping(self) -> None:
        with self.transaction() as connection:
            connection.execute(sa.select(1))

    def table(self, table_name: str) -> sa.Table:
        with self._tables_lock:  # threads share the MetaData
            if table_name not in self._tables:
                self._tables[table_name] = queue_table(self.metadata, table_name, self.dialect)
            return self._tables[table_name]

    def queries(self, table: sa.Table) -> Queries:
        """The statements of a queue table on this engine, made once."""
        queries = self.statements.get(table.name)
        if queries is None:
            queries = self.statements[table.name] = self.dialect.queries(table, self.registry)
        return queries
