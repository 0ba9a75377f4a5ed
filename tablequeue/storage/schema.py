"""The one description of a queue table and of the registry, for every engine.

A dialect module only supplies the JSON column type; everything else is SQLAlchemy Core types
that each backend renders natively (bigint identity / integer primary key, timestamptz / ISO
text, uuid / char(32)).
"""

import zlib
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from .dialects import Dialect

SCHEMA_VERSION = 2
"""1: first release. 2: the message_id index covers only messages with an identity; no index
on lease expiry (the status index finds Leased rows). A lease then updates three indexes, not
five, and an enqueue without identity four instead of five."""
REGISTRY_TABLE = "tablequeue_queues"


class UtcDateTime(sa.TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every engine (SQLite stores naive ISO text)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: tablequeue needs timezone-aware times")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):  # a value computed by SQL text on SQLite
            value = datetime.fromisoformat(value)
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _index_name(table_name: str, suffix: str) -> str:
    """`<table>_<suffix>`, shortened with a checksum to fit the 63-character identifier limit."""
    name = f"{table_name}_{suffix}"
    if len(name) <= 63:
        return name
    checksum = f"{zlib.crc32(table_name.encode()):08x}"
    return f"{table_name[: 63 - len(suffix) - 10]}_{checksum}_{suffix}"


def lease_index_name(table_name: str) -> str:
    return _index_name(table_name, "lease")


def queue_table(metadata: sa.MetaData, table_name: str, dialect: Dialect) -> sa.Table:
    json = dialect.json_type
    identity = [] if dialect.name == "sqlite" else [sa.Identity()]  # sqlite: rowid alias
    table = sa.Table(
        table_name,
        metadata,
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), *identity, primary_key=True
        ),
        sa.Column("message_id", sa.String(400)),
        sa.Column("status", sa.String(64), nullable=False),
        sa.Column("priority", sa.SmallInteger(), nullable=False, server_default="0"),
        sa.Column("message", json, nullable=False),
        sa.Column("previous_message", json),
        sa.Column("headers", json),
        sa.Column("version", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("process_after", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime()),
        sa.Column("lease_expires_at", UtcDateTime()),
        sa.Column("lease_owner", sa.String(200)),
        sa.Column("correlation_id", sa.String(100)),
        sa.Column("tracking_id", sa.Uuid(), nullable=False),
        sa.Column("result", json),
        sa.Column("progress", json),
        sa.Column("last_error", sa.Text()),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.Column("processed_at", UtcDateTime()),
        sqlite_autoincrement=True,  # never reuse the id of a deleted message
    )
    leasable = table.c.status.in_(["Pending", "Sleeping"])
    sa.Index(
        lease_index_name(table_name),
        table.c.priority.desc(),
        table.c.process_after,
        table.c.id,
        postgresql_where=leasable,
        sqlite_where=leasable,
    )
    has_identity = table.c.message_id.is_not(None)
    sa.Index(
        _index_name(table_name, "message_id"),
        table.c.message_id,
        unique=True,
        postgresql_where=has_identity,
        sqlite_where=has_identity,
    )
    sa.Index(_index_name(table_name, "tracking_id"), table.c.tracking_id, unique=True)
    sa.Index(_index_name(table_name, "status"), table.c.status, table.c.id)
    return table


def migrate(connection: sa.Connection, table: sa.Table, from_version: int) -> None:
    """Bring a queue table made by an older tablequeue to SCHEMA_VERSION (in apply's
    transaction; rebuilding an index locks the table against writes while it runs)."""
    quote = connection.dialect.identifier_preparer.quote
    if from_version < 2:
        for suffix in ("leases", "message_id"):
            connection.exec_driver_sql(
                f"DROP INDEX IF EXISTS {quote(_index_name(table.name, suffix))}"
            )
        message_id = _index_name(table.name, "message_id")
        next(index for index in table.indexes if index.name == message_id).create(connection)


def registry_table(metadata: sa.MetaData) -> sa.Table:
    return sa.Table(
        REGISTRY_TABLE,
        metadata,
        sa.Column("name", sa.String(63), primary_key=True),
        sa.Column("table_name", sa.String(63), nullable=False, unique=True),
        sa.Column("category", sa.String(100), nullable=False),
        sa.Column("default_status", sa.String(64), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
    )
