"""How MariaDB's SQL is compiled and its values sent: DATETIME(6), outcomes that read their
per-row source first, JSON_TABLE column types and values, datetimes as text for ODBC."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.mysql.base import MySQLTypeCompiler

from ...sqltypes import UtcDateTime


def datetimes_as_text(parameters: Any) -> Any:
    if not isinstance(parameters, tuple | list):
        return parameters
    return type(parameters)(
        datetime_text(value) if isinstance(value, datetime) else value for value in parameters
    )


def datetime_text(value: datetime) -> str:
    value = value.astimezone(UTC) if value.tzinfo is not None else value
    return value.strftime("%Y-%m-%d %H:%M:%S.%f")


class TypeCompiler(MySQLTypeCompiler):
    """DATETIME keeps microseconds (MariaDB's plain DATETIME rounds to whole seconds)."""

    def visit_DATETIME(self, type_: Any, **kw: Any) -> str:
        return super().visit_DATETIME(type_, **kw) if getattr(type_, "fsp", None) else "DATETIME(6)"


def per_row_first(compiler: type[Any]) -> type[Any]:
    """Outcome statements join their per-row source to the queue table: read the source first
    (`JSON_TABLE(...) AS b STRAIGHT_JOIN orders`, each row found by primary key). Left to
    itself, with few Leased rows the optimizer reads them all through the status index first,
    locking other workers' rows: outcomes of concurrent workers then deadlock."""

    class PerRowFirst(compiler):  # type: ignore[misc]
        def update_tables_clause(
            self, update_stmt: Any, from_table: Any, extra_froms: list[Any], **kw: Any
        ) -> str:
            return self._straight_join(from_table, extra_froms, **kw)

        def delete_extra_from_clause(
            self,
            delete_stmt: Any,
            from_table: Any,
            extra_froms: list[Any],
            from_hints: Any,
            **kw: Any,
        ) -> str:
            return "USING " + self._straight_join(from_table, extra_froms, **kw)

        def _straight_join(self, table: Any, extra_froms: list[Any], **kw: Any) -> str:
            kw["asfrom"] = True
            froms = [*extra_froms, table]  # dispatched in text order: positional parameters
            return " STRAIGHT_JOIN ".join(str(f._compiler_dispatch(self, **kw)) for f in froms)

    return PerRowFirst


def json_table_type(type_: sa.types.TypeEngine[Any]) -> str:
    """The JSON_TABLE column type a per-row column is read as."""
    if isinstance(type_, sa.JSON):
        return "JSON"
    if isinstance(type_, sa.Boolean):
        return "BOOLEAN"
    if isinstance(type_, sa.Integer):
        return "BIGINT"
    if isinstance(type_, sa.Float):
        return "DOUBLE"
    if isinstance(type_, UtcDateTime | sa.DateTime):
        return "DATETIME(6)"
    if isinstance(type_, sa.Uuid):
        return "CHAR(36)"
    if isinstance(type_, sa.String) and type_.length and not isinstance(type_, sa.Text):
        return f"VARCHAR({type_.length})"
    return "LONGTEXT"


def per_row_value(value: Any) -> Any:
    """A per-row value JSON cannot hold, as JSON_TABLE reads it back."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: tablequeue needs timezone-aware times")
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not a per-row parameter type")
