"""PostgreSQL through psycopg 3: jsonb, FOR UPDATE SKIP LOCKED, ON CONFLICT, advisory locks."""

import json
import zlib
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.selectable import Select

from . import JsonKind, JsonPath, notify_channel

_CASTS: dict[JsonKind, sa.types.TypeEngine[Any]] = {
    "string": sa.Text(),
    "number": sa.Numeric(),
    "boolean": sa.Boolean(),
}


def _path(path: JsonPath) -> sa.ColumnElement[Any]:
    """`strict $."Product"."Sku"[0]`, bound as one parameter: keys step only into objects and
    indexes only into arrays, as in SQLite's JSON paths."""
    steps = "".join(
        f"[{segment}]" if isinstance(segment, int) else "." + json.dumps(segment)
        for segment in path
    )
    return sa.cast(sa.bindparam(None, "strict $" + steps, type_=sa.Text), pg.JSONPATH)


def _extract(column: sa.ColumnElement[Any], path: JsonPath) -> sa.ColumnElement[Any]:
    # silent => a missing key or a wrong container type is SQL NULL instead of an error
    empty_vars = sa.cast(sa.literal_column("'{}'"), pg.JSONB)
    return sa.func.jsonb_path_query_first(
        column, _path(path), empty_vars, sa.true(), type_=pg.JSONB
    )


class PostgresDialect:
    name = "postgresql"
    driver_url_scheme = "postgresql+psycopg"
    json_type: sa.types.TypeEngine[Any] = pg.JSONB()

    def configure_engine(self, engine: Engine) -> None:
        pass

    def now(self) -> sa.ColumnElement[datetime]:
        return sa.func.now(type_=sa.DateTime(timezone=True))

    def seconds_from_now(self, seconds: sa.ColumnElement[Any]) -> sa.ColumnElement[datetime]:
        interval = sa.cast(seconds, sa.Float) * sa.literal_column("interval '1 second'")
        return sa.type_coerce(self.now() + interval, sa.DateTime(timezone=True))

    def json_scalar(
        self, column: sa.ColumnElement[Any], path: JsonPath, kind: JsonKind
    ) -> sa.ColumnElement[Any]:
        value = _extract(column, path)
        text = value.op("#>>")(sa.cast(sa.literal_column("'{}'"), pg.ARRAY(sa.Text)))
        scalar: sa.ColumnElement[Any] = sa.cast(text, _CASTS[kind])
        if kind == "string":
            scalar = scalar.collate("C")  # code point order, as SQLite compares
        return sa.case((sa.func.jsonb_typeof(value) == kind, scalar), else_=sa.null())

    def json_is_null(self, column: sa.ColumnElement[Any], path: JsonPath) -> sa.ColumnElement[bool]:
        return sa.func.coalesce(sa.func.jsonb_typeof(_extract(column, path)), "null") == "null"

    def insert(self, table: sa.Table) -> Insert:
        return pg.insert(table)

    def on_conflict_message_id(
        self, insert: Insert, set_: dict[str, Any], where: sa.ColumnElement[bool] | None
    ) -> Insert:
        assert isinstance(insert, pg.Insert)
        return insert.on_conflict_do_update(index_elements=["message_id"], set_=set_, where=where)

    def excluded(self, insert: Insert) -> Any:
        assert isinstance(insert, pg.Insert)
        return insert.excluded

    def lock_candidates(self, select: Select[Any]) -> Select[Any]:
        return select.with_for_update(skip_locked=True)

    def lock_for_ddl(self, connection: Connection, key: str) -> None:
        lock_id = zlib.crc32(f"tablequeue:{key}".encode())
        connection.execute(sa.select(sa.func.pg_advisory_xact_lock(lock_id)))

    def notify(self, connection: Connection, table_name: str) -> None:
        channel = sa.bindparam("b_channel", notify_channel(table_name), type_=sa.Text)
        connection.execute(sa.select(sa.func.pg_notify(channel, sa.literal_column("''"))))


DIALECT = PostgresDialect()
