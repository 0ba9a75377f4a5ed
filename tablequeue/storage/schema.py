"""The one description of a queue table and of the registry, for every engine.

The columns come from `Message` (models.py); a dialect supplies the JSON type, the id column,
table options and how an index is made partial. Everything else is SQLAlchemy Core types that
each backend renders natively (timestamptz / ISO text, uuid / char(32)).
"""

from collections.abc import Sequence

import sqlalchemy as sa

from .. import names
from ..dialects import Dialect
from ..models import message_columns
from ..sqltypes import UtcDateTime

SCHEMA_VERSION = 4
"""1: first release. 2: the message_id index covers only messages with an identity; no index
on lease expiry (the status index finds Leased rows). A lease then updates three indexes, not
five, and an enqueue without identity four instead of five. 3: the registry records the owner
(`namespace/name`) of an operator-managed queue (`migrate_registry`); queue tables unchanged.
4: queue tables record `started_at`, when the lease of the latest attempt began (nullable, no
index)."""
REGISTRY_TABLE = "tablequeue_queues"
ADDED_COLUMNS = ("started_at",)
"""Queue table columns `migrate` adds (version 4): a table made before lacks them until then."""


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
    if from_version < 4:
        _add_missing_columns(connection, table, ADDED_COLUMNS)


def _add_missing_columns(
    connection: sa.Connection, table: sa.Table, columns: Sequence[str]
) -> None:
    """Add the nullable `columns` the table lacks (a second run adds nothing)."""
    present = {column["name"] for column in sa.inspect(connection).get_columns(table.name)}
    quote = connection.dialect.identifier_preparer.quote
    for name in columns:
        if name not in present:
            type_ = table.c[name].type.compile(dialect=connection.dialect)
            connection.exec_driver_sql(
                f"ALTER TABLE {quote(table.name)} ADD {quote(name)} {type_} NULL"
            )


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
        sa.Column("paused_at", UtcDateTime(), nullable=True),
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
    _add_missing_columns(connection, registry, REGISTRY_ADDED_COLUMNS)


REGISTRY_ADDED_COLUMNS = ("owner", "paused_at")
"""Registry columns added after schema 2: `owner` (3), `paused_at` (when the queue was paused;
null while it runs)."""
