"""One protocol for every database engine; one module per engine with only what differs.

Adding an engine means adding a module that implements `Dialect` and registering it in
`DIALECTS`, plus a test fixture; the lifecycle conformance suite runs unchanged.
"""

import zlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.selectable import Select

JsonKind = Literal["string", "number", "boolean"]
JsonPath = Sequence[str | int]


class Dialect(Protocol):
    name: str
    """The SQLAlchemy backend name this module serves (`postgresql`, `sqlite`)."""

    driver_url_scheme: str
    """The URL scheme tablequeue connects with, driver included (`postgresql+psycopg`)."""

    json_type: sa.types.TypeEngine[Any]
    """Column type of `message`, `previous_message`, `headers`, `result`, `progress`."""

    def configure_engine(self, engine: Engine) -> None:
        """Install per-connection settings (pragmas, transaction mode)."""

    def now(self) -> sa.ColumnElement[datetime]:
        """The database's current time, in the same representation the timestamp columns use."""

    def seconds_from_now(self, seconds: sa.ColumnElement[Any]) -> sa.ColumnElement[datetime]:
        """now() plus a (bound, possibly negative or fractional) number of seconds."""

    def json_scalar(
        self, column: sa.ColumnElement[Any], path: JsonPath, kind: JsonKind
    ) -> sa.ColumnElement[Any]:
        """The JSON value at `path` as an SQL value when it is of `kind`, else SQL NULL.

        Path segments are bound as parameters, never formatted into the SQL text.
        """

    def json_is_null(self, column: sa.ColumnElement[Any], path: JsonPath) -> sa.ColumnElement[bool]:
        """True when the value at `path` is missing or JSON null."""

    def insert(self, table: sa.Table) -> Insert:
        """An INSERT that supports `on_conflict_message_id`."""

    def on_conflict_message_id(
        self, insert: Insert, set_: dict[str, Any], where: sa.ColumnElement[bool] | None
    ) -> Insert:
        """Turn the insert into an upsert on `message_id`; `set_` values may use `excluded`."""

    def excluded(self, insert: Insert) -> Any:
        """The pseudo-table of the row that failed to insert (`EXCLUDED`)."""

    def per_row(self, columns: Sequence[sa.ColumnClause[Any]]) -> sa.TableValuedAlias | None:
        """A FROM source with one row per message, read from one parameter holding every row,
        or None: then statements run once per message (executemany) with scalar parameters."""

    def per_row_parameters(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The parameter(s) `per_row`'s source reads: one dict of column values per message."""

    def lock_candidates(self, select: Select[Any], lease_index: str) -> Select[Any]:
        """Make the lease candidate query skip rows other transactions hold, and make it use
        the lease index (named `lease_index`)."""

    def tune_table(self, connection: Connection, table: sa.Table) -> None:
        """Storage settings of a queue table, applied at every `apply` (idempotent)."""

    def vacuum_if_bloated(self, engine: Engine, table: sa.Table) -> bool:
        """Reclaim finished messages' space now if enough of the table is dead and no other
        process is doing it; True when it vacuumed."""

    def lock_for_ddl(self, connection: Connection, key: str) -> None:
        """Serialize schema changes for `key` across processes, for this transaction."""

    def notify(self, connection: Connection, table_name: str) -> None:
        """Wake workers listening on this queue when the transaction commits (if supported)."""

    def notify_when_returning(self, table_name: str) -> list[sa.ColumnElement[Any]]:
        """Extra RETURNING columns that `notify` once when the statement returns any row."""

    def count_by_status(
        self, connection: Connection, table: sa.Table, exact: Sequence[str]
    ) -> tuple[dict[str, int], set[str]]:
        """Messages per status, and the statuses whose count is an estimate (never `exact`)."""


def notify_channel(table_name: str) -> str:
    """The LISTEN/NOTIFY channel of a queue table (a validated table name plus a prefix)."""
    channel = f"tq_{table_name}"
    if len(channel) <= 63:  # PostgreSQL's identifier limit
        return channel
    return f"tq_{table_name[:51]}_{zlib.crc32(table_name.encode()):08x}"


def for_backend(backend: str) -> Dialect:
    from . import postgresql, sqlite

    dialects: dict[str, Dialect] = {"postgresql": postgresql.DIALECT, "sqlite": sqlite.DIALECT}
    try:
        return dialects[backend]
    except KeyError:
        from ..errors import InvalidInput

        raise InvalidInput(
            f"unsupported database engine {backend!r}: tablequeue supports "
            + ", ".join(sorted(dialects))
        ) from None
