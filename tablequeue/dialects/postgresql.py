"""PostgreSQL through psycopg 3: jsonb, FOR UPDATE SKIP LOCKED, ON CONFLICT, advisory locks."""

import zlib
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.selectable import Select

from . import JsonKind, JsonPath

_CASTS: dict[JsonKind, sa.types.TypeEngine[Any]] = {
    "string": sa.Text(),
    "number": sa.Numeric(),
    "boolean": sa.Boolean(),
}


def _path(path: JsonPath) -> list[sa.BindParameter[str]]:
    return [sa.bindparam(None, str(segment), type_=sa.Text) for segment in path]


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
        value = sa.func.jsonb_extract_path(column, *_path(path))
        text = sa.func.jsonb_extract_path_text(column, *_path(path))
        return sa.case(
            (sa.func.jsonb_typeof(value) == kind, sa.cast(text, _CASTS[kind])),
            else_=sa.null(),
        )

    def json_is_null(self, column: sa.ColumnElement[Any], path: JsonPath) -> sa.ColumnElement[bool]:
        value = sa.func.jsonb_extract_path(column, *_path(path))
        return sa.func.coalesce(sa.func.jsonb_typeof(value), "null") == "null"

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


DIALECT = PostgresDialect()
