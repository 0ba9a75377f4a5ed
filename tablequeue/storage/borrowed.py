"""The caller's transaction: statements of the queue run on a connection the application owns
(the outbox pattern), committed or rolled back with the application's own work.

The caller gives a SQLAlchemy `Connection` (of any engine of theirs) or a DB-API connection of
the queue's driver (a psycopg 3 connection, sqlite3, PyMySQL, pyodbc). Either way the statements
are compiled and run by this database's own engine (its dialect carries tablequeue's compiler
and JSON settings) over the caller's DB-API connection, through a SQLAlchemy `Connection` that
never begins, commits or rolls back anything: the transaction is the caller's alone. Nothing is
sent before the caller commits except the statements themselves; PostgreSQL delivers the
NOTIFY they carry only at that commit, and drops it on rollback.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.pool import _AdhocProxiedConnection
from sqlalchemy.pool.base import _ConnectionRecord

from ..errors import InvalidInput

if TYPE_CHECKING:
    from .engine import Storage


class _CallersConnection(Connection):
    """A SQLAlchemy connection over the caller's DB-API connection that leaves its transaction
    alone: SQLAlchemy rolls back a connection outside a transaction of its own when a
    statement fails, which here would silently undo the caller's earlier work (on engines
    where a failed statement does not end the transaction). The caller decides."""

    def _rollback_impl(self) -> None:
        return None

    def _commit_impl(self) -> None:  # never called: no transaction is begun here
        raise AssertionError("tablequeue never commits the caller's transaction")


@contextlib.contextmanager
def borrowed(storage: Storage, connection: Any) -> Iterator[Connection]:
    """A SQLAlchemy connection for the queue's statements inside the caller's transaction.

    Refuses (InvalidInput) a connection that is not one this database can use: another engine
    or driver, another database or server, an asynchronous connection, or a connection that
    would commit each statement on its own (autocommit outside a transaction)."""
    dbapi_connection = _dbapi_connection(storage, connection)
    ours = storage.identity()  # also: the engine's dialect initialized on a connection of ours
    mine = bare(storage, dbapi_connection)
    if storage.dialect.autocommits(dbapi_connection):
        raise InvalidInput(
            "the connection is in autocommit mode outside a transaction: the message would "
            "commit on its own; enqueue inside a transaction (`with connection.begin():`, "
            "psycopg's `with conn.transaction():`)"
        )
    theirs = storage.dialect.identity(mine)
    if theirs != ours:
        ours = storage.identity(fresh=True)
    if theirs != ours:
        raise InvalidInput(
            f"the connection is to another database ({_shown(theirs)}) than the queue's "
            f"{storage.shown_url} ({_shown(ours)})"
        )
    yield mine


def bare(storage: Storage, dbapi_connection: Any) -> Connection:
    """A SQLAlchemy connection of this database's engine over a DB-API connection, that never
    begins, commits or rolls back (no BEGIN IMMEDIATE either: SQLite's would wait for the
    caller's own write lock)."""
    record = _ConnectionRecord(storage.engine.pool, connect=False)
    record.dbapi_connection = dbapi_connection
    return _CallersConnection(
        storage.engine,
        connection=_AdhocProxiedConnection(dbapi_connection, record),
        _has_events=False,
        _allow_revalidate=False,
        _allow_autobegin=False,
    )


def _dbapi_connection(storage: Storage, connection: Any) -> Any:
    """The DB-API connection under a caller's SQLAlchemy Connection, or the one given."""
    if isinstance(connection, sa.engine.Connection):
        if connection.dialect.name != storage.engine.dialect.name:
            raise InvalidInput(
                f"the connection is to a {connection.dialect.name} database; the queue is in "
                f"{storage.shown_url} ({storage.engine.dialect.name})"
            )
        if connection.dialect.driver != storage.engine.dialect.driver:
            raise InvalidInput(
                f"the connection uses the {connection.dialect.driver} driver; the queue's "
                f"database {storage.shown_url} is used through {storage.engine.dialect.driver}"
            )
        if connection.closed or connection.invalidated:
            raise InvalidInput("the connection is closed")
        if not connection.in_transaction():
            connection.begin()  # what SQLAlchemy's autobegin does; the caller commits it
        return connection.connection.dbapi_connection
    if type(connection).__module__.startswith("sqlalchemy.orm"):
        raise InvalidInput("pass the session's connection (`session.connection()`), not a Session")
    dbapi = storage.engine.dialect.loaded_dbapi
    module = type(connection).__module__.split(".")[0]
    if module != dbapi.__name__.split(".")[0] or not callable(getattr(connection, "cursor", None)):
        raise InvalidInput(
            f"cannot enqueue through a {type(connection).__module__}."
            f"{type(connection).__name__}: pass a SQLAlchemy Connection or a "
            f"{dbapi.__name__} connection to the queue's database ({storage.shown_url})"
        )
    if inspect.iscoroutinefunction(getattr(type(connection), "commit", None)):
        raise InvalidInput("an asynchronous connection cannot be used: pass a synchronous one")
    if getattr(connection, "closed", False) is True:
        raise InvalidInput("the connection is closed")
    return connection


def _shown(identity: tuple[Any, ...]) -> str:
    return ", ".join(str(part) for part in identity)
