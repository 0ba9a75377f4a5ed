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

import inspect
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import _AdhocProxiedConnection
from sqlalchemy.pool.base import _ConnectionRecord

from ..errors import InvalidInput


class _CallersConnection(Connection):
    """A SQLAlchemy connection over the caller's DB-API connection that leaves its transaction
    alone: SQLAlchemy rolls back a connection outside a transaction of its own when a
    statement fails, which here would silently undo the caller's earlier work (on engines
    where a failed statement does not end the transaction). The caller decides."""

    def _rollback_impl(self) -> None:
        return None

    def _commit_impl(self) -> None:  # never called: no transaction is begun here
        raise AssertionError("tablequeue never commits the caller's transaction")


def bare(engine: Engine, dbapi_connection: Any) -> Connection:
    """A SQLAlchemy connection of this database's engine over a DB-API connection, that never
    begins, commits or rolls back (no BEGIN IMMEDIATE either: SQLite's would wait for the
    caller's own write lock)."""
    record = _ConnectionRecord(engine.pool, connect=False)
    record.dbapi_connection = dbapi_connection
    return _CallersConnection(
        engine,
        connection=_AdhocProxiedConnection(dbapi_connection, record),
        _has_events=False,
        _allow_revalidate=False,
        _allow_autobegin=False,
    )


def dbapi_connection_of(engine: Engine, shown_url: str, connection: Any) -> Any:
    """The DB-API connection under a caller's SQLAlchemy Connection, or the one given;
    InvalidInput for one the queue's database (`engine`, shown as `shown_url`) cannot use."""
    if isinstance(connection, sa.engine.Connection):
        if connection.dialect.name != engine.dialect.name:
            raise InvalidInput(
                f"the connection is to a {connection.dialect.name} database; the queue is in "
                f"{shown_url} ({engine.dialect.name})"
            )
        if connection.dialect.driver != engine.dialect.driver:
            raise InvalidInput(
                f"the connection uses the {connection.dialect.driver} driver; the queue's "
                f"database {shown_url} is used through {engine.dialect.driver}"
            )
        if connection.closed or connection.invalidated:
            raise InvalidInput("the connection is closed")
        if not connection.in_transaction():
            connection.begin()  # what SQLAlchemy's autobegin does; the caller commits it
        return connection.connection.dbapi_connection
    if type(connection).__module__.startswith("sqlalchemy.orm"):
        raise InvalidInput("pass the session's connection (`session.connection()`), not a Session")
    dbapi = engine.dialect.loaded_dbapi
    module = type(connection).__module__.split(".")[0]
    if module != dbapi.__name__.split(".")[0] or not callable(getattr(connection, "cursor", None)):
        raise InvalidInput(
            f"cannot enqueue through a {type(connection).__module__}."
            f"{type(connection).__name__}: pass a SQLAlchemy Connection or a "
            f"{dbapi.__name__} connection to the queue's database ({shown_url})"
        )
    if inspect.iscoroutinefunction(getattr(type(connection), "commit", None)):
        raise InvalidInput("an asynchronous connection cannot be used: pass a synchronous one")
    if getattr(connection, "closed", False) is True:
        raise InvalidInput("the connection is closed")
    return connection


def shown_identity(identity: tuple[Any, ...]) -> str:
    return ", ".join(str(part) for part in identity)
