"""One database: its engine and pool, transactions, and the queue tables it knows."""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ..dialects import Dialect
from ..dialects.driver import as_sqlalchemy_error
from ..dialects.queries import Queries
from ..errors import DatabaseUnavailable, InvalidInput
from ..models import canonical_json, loads_json
from .borrowed import bare, dbapi_connection_of, shown_identity
from .connect_backoff import ConnectBackoff
from .schema import (
    AUDIT_TABLE,
    SUBSCRIPTIONS_TABLE,
    HistoryTables,
    audit_table,
    history_tables,
    queue_table,
    rate_limit_table,
    registry_table,
    schedules_table,
    subscriptions_table,
    workers_table,
)
from .timeouts import DatabaseTimeouts
from .urls import dialect_for_url, shown_url

T = TypeVar("T")
DEADLOCK_TRIES = 4
DEADLOCK_PAUSE = 0.005
"""Seconds (times the try's number, at most) before a deadlock's victim tries again."""
PING_AFTER_IDLE_SECONDS = 1.0
KEEP_AUTOCOMMIT = 2
"""Autocommit connections kept checked out between uses (`Storage.autocommit`): enough for a
worker's lease loop and its settling, few enough to leave the pool to transactions."""
_PARENTS_CONNECTIONS: list[Any] = []
"""In a forked child, the connections its parent kept: held so that no finalizer returns or
closes them from here (closing would end the parent's session on the shared socket)."""


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


def _set_up_each_transaction(engine: Engine, setup: Callable[[Any], None]) -> None:
    @sa.event.listens_for(engine, "begin")
    def _began(connection: Connection) -> None:
        setup(connection.connection.dbapi_connection)


def _first_line(error: BaseException) -> str:
    text = str(getattr(error, "orig", None) or error).strip()
    return text.splitlines()[0].strip() if text else type(error).__name__


class Storage:
    """A database that holds queues: one engine, one dialect, the registry table, and the
    statements of each queue table (built once per table)."""

    def __init__(
        self,
        url: str,
        timeouts: DatabaseTimeouts | None = None,
        connect_backoff_seconds: float | None = None,
        **engine_options: Any,
    ) -> None:
        """`connect_backoff_seconds`: after a failed connect, every connect fails at once for
        this long, then one tries again (`ConnectBackoff`); None: every connect tries."""
        self.dialect: Dialect
        self.dialect, self.url = dialect_for_url(url)
        self.shown_url = shown_url(url)
        self.timeouts = timeouts or DatabaseTimeouts.from_environment()
        options: dict[str, Any] = {
            "json_serializer": canonical_json,
            "json_deserializer": loads_json,
        }
        connect_args = self.dialect.connect_args(
            self.url, self.timeouts.connect_seconds, self.timeouts.statement_seconds
        )
        options["connect_args"] = connect_args | engine_options.pop("connect_args", {})
        options.update(engine_options)
        self.engine: Engine = sa.create_engine(self.url, **options)
        _ping_when_idle(self.engine)
        self._setup = self.dialect.transaction_setup(self.timeouts.statement_seconds)
        """Run at the start of each transaction (behind a transaction pooler), else None."""
        if self._setup is not None:
            _set_up_each_transaction(self.engine, self._setup)
        self.dialect.configure_engine(self.engine)
        self.metadata = sa.MetaData()
        self.registry = registry_table(self.metadata)
        self.rate_limits = rate_limit_table(self.metadata)
        self.history: HistoryTables = history_tables(self.metadata, self.dialect)
        """The shared tables of results, attempts and the housekeeping lease."""
        self.workers_table = workers_table(self.metadata)
        self.schedules = schedules_table(self.metadata)
        self.subscriptions = subscriptions_table(self.metadata)
        self._subscription_columns: frozenset[str] = frozenset()
        self.audit = audit_table(self.metadata, self.dialect)
        self._has_audit = False
        self._tables: dict[str, sa.Table] = {}
        self._tables_lock = threading.Lock()
        self.statements: dict[str, Queries] = {}
        self.specs: dict[str, tuple[Any, Any]] = {}
        """Each queue's registry settings and their validated spec (`queue.context.spec_of`)."""
        """The hot statements of each queue table, by table name."""
        self._identity: tuple[Any, ...] | None = None
        self._kept_autocommit: list[tuple[Any, float]] = []
        """Pooled connections in autocommit mode between uses, with when each was last used."""
        self._keep_autocommit = (
            KEEP_AUTOCOMMIT if type(self.engine.pool) is sa.pool.QueuePool else 0
        )
        """None kept from other pools: a StaticPool would hand the kept one to a transaction."""
        self._kept_lock = threading.Lock()
        self._kept_by = os.getpid()
        """The process whose connections they are: a forked child neither uses nor closes them."""
        self._closed = False
        self._backoff = (
            None if connect_backoff_seconds is None else ConnectBackoff(connect_backoff_seconds)
        )

    def close(self) -> None:
        with self._kept_lock:
            self._closed = True
            kept, self._kept_autocommit = self._kept_here(), []
        for pooled, _ in kept:
            self._return_to_pool(pooled)
        self.engine.dispose()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction; an unreachable database becomes one clear DatabaseUnavailable."""
        connection = self._connected(self.engine.connect)
        try:
            with connection.begin():
                yield connection
        except sa.exc.DBAPIError as error:
            self._raise_unavailable(error)
            raise
        finally:
            connection.close()

    def in_transaction(self, work: Callable[[Connection], T]) -> T:
        """`work(connection)` in a transaction, run again (up to DEADLOCK_TRIES times in all)
        when the database rolled the transaction back as a deadlock's victim: nothing of it
        happened, and under concurrent leases and outcomes InnoDB chooses victims now and
        then. Only for work whose effects are all in the transaction."""
        for attempt in range(1, DEADLOCK_TRIES + 1):
            try:
                with self.transaction() as connection:
                    return work(connection)
            except sa.exc.DBAPIError as error:
                if attempt == DEADLOCK_TRIES or not self.dialect.deadlocked(error.orig or error):
                    raise
                time.sleep(random.uniform(0, DEADLOCK_PAUSE * attempt))  # apart from the other
        raise AssertionError("unreachable: the last try returns or raises")

    def _pooled(self) -> Any:
        """A pooled DB-API connection; an unreachable database is DatabaseUnavailable."""
        return self._connected(self.engine.raw_connection)

    def _connected(self, connect: Callable[[], T]) -> T:
        """`connect()` (a checkout from the pool) with every way it fails as one
        DatabaseUnavailable: the driver's errors (the pool raises them unwrapped from
        `raw_connection`), SQLAlchemy's, and no connection free within the pool's timeout;
        under the connect back-off, if any."""
        try:
            with self._backoff.attempt() if self._backoff else contextlib.nullcontext():
                try:
                    return connect()
                except (sa.exc.DBAPIError, self.engine.dialect.loaded_dbapi.Error) as error:
                    raise self._cannot_connect(error) from None
        except sa.exc.TimeoutError as error:
            raise DatabaseUnavailable(
                f"no free connection to {self.shown_url}: {_first_line(error)}"
            ) from None

    def _cannot_connect(self, error: Exception) -> DatabaseUnavailable:
        return DatabaseUnavailable(f"cannot connect to {self.shown_url}: {_first_line(error)}")

    def _raise_unavailable(self, error: sa.exc.DBAPIError) -> None:
        """DatabaseUnavailable for a lost connection or a cancelled statement."""
        if error.connection_invalidated:
            raise DatabaseUnavailable(
                f"lost connection to {self.shown_url}: {_first_line(error)}"
            ) from error
        if self.dialect.statement_cancelled(error.orig or error):
            raise DatabaseUnavailable(
                f"{self.shown_url} cancelled a statement: {_first_line(error)}"
            ) from error

    @property
    def statements_in_autocommit(self) -> bool:
        """Whether an enqueue, or a worker's cycle, may be statements in autocommit
        (`autocommit`): the engine can (`capabilities.enqueues_in_autocommit`) and nothing has to
        run at the start of each transaction (behind a transaction pooler the statement timeout
        is set per transaction)."""
        return self.dialect.capabilities.enqueues_in_autocommit and self._setup is None

    @contextlib.contextmanager
    def autocommit(self) -> Iterator[Any]:
        """A pooled DB-API connection in autocommit mode, for statements that are each their
        own transaction (no BEGIN, no COMMIT: one round trip each). The driver's errors become
        SQLAlchemy's, as `transaction()` raises them (a lost connection is discarded from the
        pool: DatabaseUnavailable), and so do those of SQLAlchemy statements run over it.

        A few such connections stay checked out between uses, in autocommit mode
        (`_kept_autocommit`): the pool's checkout and return and the two mode switches cost
        about a sixth of a single enqueue's client CPU. One that sat idle is tested first, as
        the pool tests its own (`_ping_when_idle`)."""
        driver = self.engine.dialect
        pooled = self._autocommit_connection()
        dbapi_connection: Any = pooled.dbapi_connection
        kept = False
        try:
            yield dbapi_connection
            kept = self._keep(pooled)
        except driver.loaded_dbapi.Error as error:
            lost, wrapped = as_sqlalchemy_error(driver, error, dbapi_connection)
            if lost:
                pooled.invalidate(error)
            if isinstance(wrapped, sa.exc.DBAPIError):
                self._raise_unavailable(wrapped)
            raise wrapped from error
        except sa.exc.DBAPIError as error:  # of a statement run through `borrowed.bare`
            if error.connection_invalidated:
                pooled.invalidate(error.orig)
            self._raise_unavailable(error)
            raise
        finally:
            if not kept:
                self._return_to_pool(pooled)

    def _keep(self, pooled: Any) -> bool:
        """Keep a connection that served its statements for the next use, unless enough are
        kept or the database is closed; whether it was."""
        with self._kept_lock:
            kept = self._kept_here()
            if len(kept) < self._keep_autocommit and not self._closed:
                kept.append((pooled, time.monotonic()))
                return True
        return False

    def _kept_here(self) -> list[tuple[Any, float]]:
        """The kept connections of this process (with `_kept_lock` held): in a forked child,
        its parent's are parked, neither used nor closed (that would end the parent's sessions
        on the sockets both hold)."""
        if self._kept_by != os.getpid():
            _PARENTS_CONNECTIONS.extend(self._kept_autocommit)
            self._kept_autocommit, self._kept_by = [], os.getpid()
        return self._kept_autocommit

    def _autocommit_connection(self) -> Any:
        """A kept autocommit connection (tested first when it sat idle), else one from the
        pool switched to autocommit."""
        while True:
            with self._kept_lock:
                here = self._kept_here()
                kept = here.pop() if here else None
            if kept is None:
                break
            pooled, since = kept
            if time.monotonic() - since < PING_AFTER_IDLE_SECONDS:
                return pooled
            try:
                self.engine.dialect.do_ping(pooled.dbapi_connection)
                return pooled
            except Exception as error:  # the database restarted meanwhile: try the next
                pooled.invalidate(error)
                pooled.close()
        pooled = self._pooled()
        try:
            pooled.dbapi_connection.autocommit = True
        except self.engine.dialect.loaded_dbapi.Error as error:
            pooled.invalidate(error)
            pooled.close()
            raise self._cannot_connect(error) from None
        return pooled

    def _return_to_pool(self, pooled: Any) -> None:
        """Back into the pool, out of autocommit mode (never into the pool in it)."""
        try:
            if pooled.is_valid:
                pooled.dbapi_connection.autocommit = False
        except self.engine.dialect.loaded_dbapi.Error as error:
            pooled.invalidate(error)
        pooled.close()

    def has_subscriptions_table(self, connection: Connection) -> bool:
        """Whether `tablequeue_subscriptions` exists."""
        return bool(self.subscription_columns(connection))

    def subscription_columns(self, connection: Connection) -> frozenset[str]:
        """The columns `tablequeue_subscriptions` has (none: no table yet); asked until it has
        every column of this version (apply adds them), then remembered."""
        if self._subscription_columns != frozenset(self.subscriptions.c.keys()):
            inspector = sa.inspect(connection)
            if inspector.has_table(SUBSCRIPTIONS_TABLE):
                columns = inspector.get_columns(SUBSCRIPTIONS_TABLE)
                self._subscription_columns = frozenset(column["name"] for column in columns)
        return self._subscription_columns

    def has_audit_table(self, connection: Connection) -> bool:
        """Whether `tablequeue_audit` exists (asked until it does, then remembered)."""
        if not self._has_audit:
            self._has_audit = sa.inspect(connection).has_table(AUDIT_TABLE)
        return self._has_audit

    def delete_in_batches(
        self,
        table: sa.Table,
        where: sa.ColumnElement[bool],
        batch: int,
        guard: Callable[[Connection], bool] | None = None,
    ) -> int:
        """Delete the rows `where` chooses, `batch` a statement, each in its own transaction;
        `guard` runs first in each and stops the deleting when it says False. How many went."""
        statement = self.dialect.delete_some(table, where, batch)
        total = 0
        while True:
            with self.transaction() as connection:
                if guard is not None and not guard(connection):
                    return total
                deleted = int(connection.execute(statement).rowcount)
            total += deleted
            if deleted < batch:
                return total

    def identity(self, fresh: bool = False) -> tuple[Any, ...]:
        """What identifies the database this engine's connections work in (server, database,
        schema), remembered: a caller's connection must show the same to enqueue with it.
        `fresh` asks again (a restarted or failed-over server has a new start time)."""
        if self._identity is None or fresh:
            with self.reading() as connection:
                self._identity = self.dialect.identity(connection)
        return self._identity

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        """A pooled connection for reads that takes no lock (no BEGIN IMMEDIATE on SQLite, so
        it works while a caller's transaction holds the write lock); rolled back after."""
        pooled = self._pooled()
        try:
            if self._setup is not None:
                self._setup(pooled.dbapi_connection)
            yield bare(self.engine, pooled.dbapi_connection)
        finally:
            pooled.close()  # the pool's reset on return rolls back

    @contextlib.contextmanager
    def borrowed(self, connection: Any) -> Iterator[Connection]:
        """A SQLAlchemy connection for the queue's statements inside the caller's transaction
        (see `storage.borrowed`).

        Refuses (InvalidInput) a connection that is not one this database can use: another
        engine or driver, another database or server, an asynchronous connection, or a
        connection that would commit each statement on its own (autocommit outside a
        transaction)."""
        dbapi_connection = dbapi_connection_of(self.engine, self.shown_url, connection)
        ours = self.identity()  # also: the engine's dialect initialized on a connection of ours
        mine = bare(self.engine, dbapi_connection)
        if self.dialect.autocommits(dbapi_connection):
            raise InvalidInput(
                "the connection is in autocommit mode outside a transaction: the message would "
                "commit on its own; enqueue inside a transaction (`with connection.begin():`, "
                "psycopg's `with conn.transaction():`)"
            )
        theirs = self.dialect.identity(mine)
        if theirs != ours:
            ours = self.identity(fresh=True)
        if theirs != ours:
            raise InvalidInput(
                f"the connection is to another database ({shown_identity(theirs)}) than the "
                f"queue's {self.shown_url} ({shown_identity(ours)})"
            )
        yield mine

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
            queries = self.statements[table.name] = self.dialect.queries(
                table, self.registry, self.rate_limits
            )
        return queries
