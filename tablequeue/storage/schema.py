"""The one description of a queue table and of the registry, for every engine.

The columns come from `Message` (models.py); a dialect supplies the JSON type, the id column,
table options and how an index is made partial. Everything else is SQLAlchemy Core types that
each backend renders natively (timestamptz / ISO text, uuid / char(32)).
"""

import sqlalchemy as sa

from .. import names
from ..dialects import Dialect
from ..models import message_columns
from ..sqltypes import UtcDateTime

SCHEMA_VERSION = 2
"""1: first release. 2: the message_id index covers only messages with an identity; no index
on lease expiry (the status index finds Leased rows). A lease then updates three indexes, not
five, and an enqueue without identity four instead of five."""
REGISTRY_TABLE = "tablequeue_queues"


def queue_table(metadata: sa.MetaData, table_name: str, dialect: Dialect) -> sa.Table:
    columns: list[sa.Column[object]] = []
    for name, spec in message_columns():
        if spec.type == "id":
            columns.append(dialect.id_column())  # type: ignore[arg-type]
            continue
        type_ = dialect.json_type if spec.type == "json" else spec.type
        columns.append(
            sa.Column(name, type_, nullable=spec.nullable, server_default=spec.server_default)
        )
    table = sa.Table(table_name, metadata, *columns, **dialect.table_options())
    dialect.lease_index(table, names.lease_index_name(table_name))
    sa.Index(
        names.index_name(table_name, "message_id"),
        table.c.message_id,
        unique=True,
        **dialect.partial_index_options(table.c.message_id.is_not(None)),
    )
    sa.Index(names.index_name(table_name, "tracking_id"), table.c.tracking_id, unique=True)
    sa.Index(names.index_name(table_name, "status"), table.c.status, table.c.id)
    return table


def migrate(connection: sa.Connection, table: sa.Table, from_version: int) -> None:
    """Bring a queue table made by an older tablequeue to SCHEMA_VERSION (in apply's
    transaction; rebuilding an index locks the table against writes while it runs)."""
    quote = connection.dialect.identifier_preparer.quote
    if from_version < 2:
        for suffix in ("leases", "message_id"):
            connection.exec_driver_sql(
                f"DROP INDEX IF EXISTS {quote(names.index_name(table.name, suffix))}"
            )
        message_id = names.index_name(table.name, "message_id")
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
