"""Hot statements run on psycopg directly: SQLAlchemy renders each once, the driver runs it.

A `DriverStatement` is a SQLAlchemy statement compiled once (kept per queue table with its
`Queries`, `Queries.once`) into what psycopg takes: the text with positional `%s` placeholders,
the order of its parameters, their fixed values (e.g. the NOTIFY channel) and the bind
processors of their types (JSON to text, times to UTC). Running it is one
`cursor.execute(..., prepare=True)`: no SQLAlchemy compile-cache lookup, execution context or
result objects per call, and the statement is prepared on its first run instead of psycopg's
fifth (unless the connection prepares nothing: `prepare_threshold=None` behind a transaction
pooler, where psycopg then sends the text each time). Rows come back as plain tuples in the
order of `columns`, times as aware UTC datetimes as SQLAlchemy's `UtcDateTime` gives them
(psycopg gives them in the session's time zone: converted only when that is not UTC).

Besides the autocommit enqueue, the statements of a worker's cycle run this way inside
SQLAlchemy's transaction (`driver_connection`): the same connection and transaction, the
driver's errors raised as SQLAlchemy raises them.

PostgreSQL re-plans a prepared statement after DDL on its tables (a migration, or a queue
table dropped and created again under the same name), and psycopg forgets its prepared
statements after a DROP/ALTER on the same connection. A migration elsewhere that changes the
type of a column the statement returns makes PostgreSQL refuse the old plan ("cached plan must
not change result type", before anything ran): in autocommit the connection's prepared
statements are then deallocated and the statement runs once more (psycopg 3.3.6 and later
forget their names on DEALLOCATE ALL: the project's floor). The error is known by its SQLSTATE
alone, whatever language the server writes its messages in.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, tzinfo
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.engine import Connection
from sqlalchemy.sql.compiler import SQLCompiler

from ..sqltypes import UtcDateTime

_JSON = functools.partial(json.dumps, separators=(",", ":"), allow_nan=False)
"""JSON parameters as text (jsonb keeps no key order or spacing of its own)."""
_POSITIONAL = PGDialect_psycopg(paramstyle="format", json_serializer=_JSON)  # type: ignore[no-untyped-call]


class DriverStatement:
    """One statement rendered for psycopg, run with a dict of the parameters that vary."""

    def __init__(self, statement: sa.ClauseElement) -> None:
        compiled = statement.compile(dialect=_POSITIONAL)
        assert isinstance(compiled, SQLCompiler)
        self.sql: str = compiled.string
        names = list(compiled.positiontup or ())
        self.names: tuple[str, ...] = tuple(names)
        fixed = compiled.params
        processors: list[Callable[[Any], Any] | None] = [
            compiled.binds[name].type.bind_processor(_POSITIONAL) for name in names
        ]
        self._fixed = {n: fixed[n] for n in names if fixed.get(n) is not None}
        self._steps = list(zip(names, processors, strict=True))
        returning = getattr(compiled, "returning", None) or ()
        self.columns: tuple[str, ...] = tuple(column.key for column in returning)
        self._times = tuple(
            i for i, column in enumerate(returning) if isinstance(column.type, UtcDateTime)
        )

    def parameters(self, values: dict[str, Any]) -> list[Any]:
        """The positional parameters: each value (or its fixed one) through its processor."""
        fixed = self._fixed
        out: list[Any] = []
        for name, process in self._steps:
            value = values[name] if name in values else fixed.get(name)
            out.append(value if process is None or value is None else process(value))
        return out

    def run(self, dbapi_connection: Any, values: dict[str, Any]) -> Sequence[tuple[Any, ...]]:
        """Execute on a psycopg connection (in whatever transaction state it is in) and fetch
        the rows it returns, if any."""
        with dbapi_connection.cursor() as cursor:
            self._execute(dbapi_connection, cursor, values)
            if not self.columns:  # (cursor.description would build column objects)
                return []
            rows: list[tuple[Any, ...]] = cursor.fetchall()
            return _in_utc(rows, self._times, dbapi_connection.info.timezone)

    def count(self, dbapi_connection: Any, values: dict[str, Any]) -> int:
        """Execute as `run` does; the number of rows the statement changed."""
        with dbapi_connection.cursor() as cursor:
            self._execute(dbapi_connection, cursor, values)
            return int(cursor.rowcount)

    def _execute(self, dbapi_connection: Any, cursor: Any, values: dict[str, Any]) -> None:
        parameters = self.parameters(values)
        try:
            cursor.execute(self.sql, parameters, prepare=True)
        except Exception as error:  # psycopg's, without importing psycopg everywhere
            stale = getattr(error, "sqlstate", None) == FEATURE_NOT_SUPPORTED
            if not (stale and dbapi_connection.autocommit):
                raise  # in a transaction: its rollback makes psycopg deallocate every statement
            dbapi_connection.execute("DEALLOCATE ALL")  # psycopg forgets its names too
            cursor.execute(self.sql, parameters, prepare=True)


def _in_utc(
    rows: list[tuple[Any, ...]], positions: tuple[int, ...], zone: tzinfo
) -> list[tuple[Any, ...]]:
    """The rows with their times (at `positions`) in UTC; as they are when the session's time
    zone is UTC already."""
    if zone is UTC or not positions or not rows:
        return rows
    converted = []
    for row in rows:
        values = list(row)
        for i in positions:
            if values[i] is not None:
                values[i] = values[i].astimezone(UTC)
        converted.append(tuple(values))
    return converted


@contextlib.contextmanager
def driver_connection(connection: Connection) -> Iterator[Any]:
    """The driver's connection under a SQLAlchemy connection, in its transaction; the driver's
    errors raised as SQLAlchemy raises them (a lost connection invalidated)."""
    dbapi_connection = connection.connection.driver_connection
    dialect = connection.dialect
    try:
        yield dbapi_connection
    except dialect.loaded_dbapi.Error as error:
        lost, wrapped = as_sqlalchemy_error(dialect, error, dbapi_connection)
        if lost:
            connection.invalidate(error)
        raise wrapped from error


def as_sqlalchemy_error(
    dialect: sa.Dialect, error: Any, dbapi_connection: Any
) -> tuple[bool, Exception]:
    """Whether a driver error lost the connection, and the error SQLAlchemy raises for it."""
    lost = bool(dialect.is_disconnect(error, dbapi_connection, None))
    wrapped = sa.exc.DBAPIError.instance(
        None, None, error, dialect.loaded_dbapi.Error, connection_invalidated=lost
    )
    return lost, wrapped


FEATURE_NOT_SUPPORTED = "0A000"
"""SQLSTATE of "cached plan must not change result type" (other refusals of this class fail
again on the second run and are raised then)."""
