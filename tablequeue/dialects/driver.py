"""Hot statements run on psycopg directly: SQLAlchemy renders each once, the driver runs it.

A `DriverStatement` is a SQLAlchemy statement compiled once (kept per queue table with its
`Queries`, `Queries.once`) into what psycopg takes: the text with positional `%s` placeholders,
the order of its parameters, their fixed values (e.g. the NOTIFY channel) and the bind
processors of their types (JSON to text, times to UTC). Running it is one
`cursor.execute(..., prepare=True)`: no SQLAlchemy compile-cache lookup, execution context or
result objects per call, and the statement is prepared on its first run instead of psycopg's
fifth (unless the connection prepares nothing: `prepare_threshold=None` behind a transaction
pooler, where psycopg then sends the text each time). Rows come back as plain tuples in the
order of `columns`.

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

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.sql.compiler import SQLCompiler

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
        self.columns: tuple[str, ...] = tuple(
            column.key for column in getattr(compiled, "returning", None) or ()
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
        parameters = self.parameters(values)
        with dbapi_connection.cursor() as cursor:
            try:
                cursor.execute(self.sql, parameters, prepare=True)
            except Exception as error:  # psycopg's, without importing psycopg everywhere
                stale = getattr(error, "sqlstate", None) == FEATURE_NOT_SUPPORTED
                if not (stale and dbapi_connection.autocommit):
                    raise
                dbapi_connection.execute("DEALLOCATE ALL")  # psycopg forgets its names too
                cursor.execute(self.sql, parameters, prepare=True)
            if not self.columns:  # (cursor.description would build column objects)
                return []
            rows: list[tuple[Any, ...]] = cursor.fetchall()
            return rows


FEATURE_NOT_SUPPORTED = "0A000"
"""SQLSTATE of "cached plan must not change result type" (other refusals of this class fail
again on the second run and are raised then)."""
