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

SCHEMA_VERSION = 3
"""1: first release. 2: the message_id index covers only messages with an identity; no index
on lease expiry (the status index finds Leased rows). A lease then updates three indexes, not
five, and an enqueue without identity four instead of five. 3: the registry records the owner
(`namespace/name`) of an operator-managed queue (`migrate_registry`); queue tables unchanged."""
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
        sa.Column("owner", sa.String(OWNER_LENGTH), nullable=True),
    )


OWNER_LENGTH = 127
"""`namespace/name` of the Queue resource that manages a queue: 63 + 1 + 63."""
REGISTRY_READ_COLUMNS = (
    "name",
    "table_name",
    "category",
    "default_status",
    "settings",
    "schema_version",
    "created_at",
    "updated_at",
)
"""What workers, the API and the CLI read: a registry of schema 2 (no `owner` yet, until the
operator or `queue apply` migrates it) serves them unchanged."""


def migrate_registry(connection: sa.Connection, registry: sa.Table) -> None:
    """Add the columns a registry made by an older tablequeue lacks (under the DDL lock)."""
    present = {column["name"] for column in sa.inspect(connection).get_columns(registry.name)}
    if "owner" not in present:
        quote = connection.dialect.identifier_preparer.quote
        type_ = registry.c.owner.type.compile(dialect=connection.dialect)
        connection.exec_driver_sql(
            f"ALTER TABLE {quote(registry.name)} ADD {quote('owner')} {type_} NULL"
        )
