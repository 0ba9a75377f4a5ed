"""The one description of every table tablequeue owns, for every engine, and the migrations
of tables made by an older tablequeue.

Per queue, its queue table; per database, the registry of queues, rate limits, the job history
(results, attempts, housekeeping), live workers, schedules, topic subscriptions and the chart
rollup. A queue table's columns come from `Message` (models/messages.py); a dialect supplies
the JSON type, the id column, table options and how an index is made partial. Everything else is
SQLAlchemy Core types that each backend renders natively (timestamptz / ISO text, uuid /
char(32)).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from .. import names
from ..dialects import Dialect
from ..limits import HOST_LENGTH, MAX_MESSAGE_ID_LENGTH, WORKER_ID_LENGTH
from ..models import message_columns
from ..sqltypes import UtcDateTime

if TYPE_CHECKING:
    from ..spec import QueueSpec

SCHEMA_VERSION = 7
"""1: first release. 2: the message_id index covers only messages with an identity; no index
on lease expiry (the status index finds Leased rows). A lease then updates three indexes, not
five, and an enqueue without identity four instead of five. 3: the registry records the owner
(`namespace/name`) of an operator-managed queue (`migrate_registry`); queue tables unchanged.
4: queue tables record `started_at`, when the lease of the latest attempt began (nullable, no
index). 5: JSON is stored as written (UTF-8), not with non-ASCII characters escaped, on engines
that store JSON as text (`readable_json.rewrite_table`, before the registry records 5).
6: queue tables record the caller's correlation id (`app_correlation_id`, indexed with `id`:
many messages share one, and a page of them is read across queues) and a `label`, both nullable; the
lease batch keeps its column, `correlation_id`, so workers of version 5 run on unchanged.
7: queue tables record the message's `group_key` (nullable; `spec.groups`), indexed with status
and `id` over the messages that can hold a group (partial where the engine can)."""
READABLE_JSON_VERSION = 5
REGISTRY_TABLE = "tablequeue_queues"
ADDED_COLUMNS = ("started_at",)
"""Queue table columns `migrate` adds (version 4): a table made before lacks them until then."""
CORRELATION_COLUMNS = ("app_correlation_id", "label")
"""Queue table columns `migrate` adds (version 6), with the index on the first."""
GROUP_COLUMNS = ("group_key",)
"""Queue table columns `migrate` adds (version 7), with the group index."""


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
    sa.Index(
        correlation_index_name(table_name),
        table.c.app_correlation_id,
        table.c.id,  # a page of one correlation id in id order, without a sort or a scan
        **dialect.partial_index_options(table.c.app_correlation_id.is_not(None)),
    )
    holding = names.GROUP_HOLDING + names.GROUP_HOLDING_ON_FAILURE
    sa.Index(
        group_index_name(table_name),
        table.c.group_key,
        table.c.status,  # what holds a message's group: the messages of its key before it,
        table.c.id,  # and those Leased after it
        **dialect.partial_index_options(
            sa.and_(table.c.group_key.is_not(None), table.c.status.in_(holding))
        ),
    )
    return table


def correlation_index_name(table_name: str) -> str:
    return names.index_name(table_name, "correlation")


def group_index_name(table_name: str) -> str:
    return names.index_name(table_name, "group")


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
        add_missing_columns(connection, table, ADDED_COLUMNS)
    if from_version < 6:
        add_missing_columns(connection, table, CORRELATION_COLUMNS)
        _create_index(connection, table, correlation_index_name(table.name))
    if from_version < 7:
        add_missing_columns(connection, table, GROUP_COLUMNS)
        _create_index(connection, table, group_index_name(table.name))


def _create_index(connection: sa.Connection, table: sa.Table, name: str) -> None:
    next(index for index in table.indexes if index.name == name).create(connection, checkfirst=True)


def add_missing_columns(connection: sa.Connection, table: sa.Table, columns: Sequence[str]) -> None:
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
        *(sa.Column(column.name, column.type, nullable=True) for column in SPEC_COLUMNS),
    )


@dataclass(frozen=True)
class SpecColumn:
    """A registry column that copies a spec field every lease must see in SQL (the lease's flow
    gate reads the registry row, not the spec's JSON): written from the spec at each apply,
    null when the option is unset."""

    name: str
    type: sa.types.TypeEngine[Any]
    of: Callable[[QueueSpec], Any]
    """The column's value for a spec."""


SPEC_COLUMNS = (
    SpecColumn("max_leased", sa.Integer(), lambda spec: spec.global_concurrency),
    SpecColumn(
        "group_limit",
        sa.Integer(),
        lambda spec: spec.groups.concurrency if spec.groups is not None else None,
    ),
    SpecColumn(
        "group_hold",
        sa.Boolean(),
        lambda spec: spec.groups.on_failure == "hold" if spec.groups is not None else None,
    ),
)
"""The registry's copy of the spec, declared once: the table's columns, the migration that adds
them, the insert and the update of apply are all derived from it. A new option that SQL must
see is one entry here (docs/internals/extending.md)."""


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
    add_missing_columns(connection, registry, REGISTRY_ADDED_COLUMNS)


REGISTRY_ADDED_COLUMNS = ("owner", "paused_at", *(column.name for column in SPEC_COLUMNS))
"""Registry columns added after schema 2: `owner` (3), `paused_at` (when the queue was paused;
null while it runs), and the copies of the spec (`SPEC_COLUMNS`)."""


# --- the tables of each database, beside its queue tables ------------------------------------

RATE_LIMIT_TABLE = "tablequeue_rate_limits"


def rate_limit_table(metadata: sa.MetaData) -> sa.Table:
    return sa.Table(
        RATE_LIMIT_TABLE,
        metadata,
        sa.Column("queue", sa.String(63), primary_key=True),
        sa.Column("messages_per_second", sa.Double(), nullable=False),
        sa.Column("burst", sa.Integer(), nullable=False),
        sa.Column("theoretical_arrival", sa.Double(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
    )


SUBSCRIPTIONS_TABLE = "tablequeue_subscriptions"


def subscriptions_table(metadata: sa.MetaData) -> sa.Table:
    return sa.Table(
        SUBSCRIPTIONS_TABLE,
        metadata,
        sa.Column("topic", sa.String(63), primary_key=True),
        sa.Column("queue_name", sa.String(63), primary_key=True),
        sa.Column("where_text", sa.Text(), nullable=True),
        sa.Column("origin", sa.String(16), nullable=False, server_default="spec"),
        sa.Column("expires_at", UtcDateTime(), nullable=True),
    )


SUBSCRIPTION_ADDED_COLUMNS = ("origin", "expires_at")
"""Columns added with runtime subscriptions: a table made before lacks them until apply
(`subscriptions.ensure`); its rows are the spec's (`origin` defaults to "spec")."""


SCHEDULES_TABLE = "tablequeue_schedules"


def schedules_table(metadata: sa.MetaData) -> sa.Table:
    return sa.Table(
        SCHEDULES_TABLE,
        metadata,
        sa.Column("queue", sa.String(63), primary_key=True),
        sa.Column("schedule", sa.String(63), primary_key=True),
        sa.Column("cron", sa.String(200), nullable=False),
        sa.Column("time_zone", sa.String(64), nullable=False),
        sa.Column("next_tick", UtcDateTime(), nullable=False),
        sa.Column("last_tick", UtcDateTime(), nullable=True),
        sa.Column("last_fired_at", UtcDateTime(), nullable=True),
        sa.Column("last_message", sa.BigInteger(), nullable=True),
        sa.Column("fired", sa.Integer(), nullable=False),
        sa.Column("skipped", sa.Integer(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
    )


WORKERS_TABLE = "tablequeue_workers"


def workers_table(metadata: sa.MetaData) -> sa.Table:
    return sa.Table(
        WORKERS_TABLE,
        metadata,
        sa.Column("worker_id", sa.String(WORKER_ID_LENGTH), primary_key=True),
        sa.Column("queue", sa.String(63), nullable=False),
        sa.Column("host", sa.String(HOST_LENGTH), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("heartbeat_seconds", sa.Float(), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("last_seen", UtcDateTime(), nullable=False),
        sa.Column("in_flight", sa.Integer(), nullable=False),
        sa.Column("processed", sa.BigInteger(), nullable=False),
        sa.Column("failed", sa.BigInteger(), nullable=False),
        sa.Index("tablequeue_workers_queue", "queue"),
    )


RESULTS_TABLE = "tablequeue_results"
ATTEMPTS_TABLE = "tablequeue_attempts"
HOUSEKEEPING_TABLE = "tablequeue_housekeeping"
QUEUE_NAME_LENGTH = 63
ATTEMPT_OWNER_LENGTH = 200
CORRELATION_LENGTH = 100


@dataclass(frozen=True)
class HistoryTables:
    """The shared tables of job history, one set per database: results that outlive their
    message, the last attempts of each message, and the housekeeping lease that lets one worker
    at a time purge a queue. Rows name their queue, so the table names are fixed."""

    results: sa.Table
    attempts: sa.Table
    housekeeping: sa.Table

    def all(self) -> list[sa.Table]:
        return [self.results, self.attempts, self.housekeeping]


def history_tables(metadata: sa.MetaData, dialect: Dialect) -> HistoryTables:
    results = sa.Table(
        RESULTS_TABLE,
        metadata,
        sa.Column("tracking_id", sa.Uuid(), primary_key=True),
        sa.Column("queue", sa.String(QUEUE_NAME_LENGTH), nullable=False),
        sa.Column("message_pk", sa.BigInteger(), nullable=False),
        sa.Column("message_id", sa.String(MAX_MESSAGE_ID_LENGTH), nullable=True),
        sa.Column("status", sa.String(64), nullable=False),
        sa.Column("result", dialect.json_type, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("processed_at", UtcDateTime(), nullable=False),
        **dialect.table_options(),
    )
    sa.Index("tablequeue_results_queue_processed", results.c.queue, results.c.processed_at)
    attempts = sa.Table(
        ATTEMPTS_TABLE,
        metadata,
        dialect.id_column(),
        sa.Column("queue", sa.String(QUEUE_NAME_LENGTH), nullable=False),
        sa.Column("tracking_id", sa.Uuid(), nullable=False),
        sa.Column("message_pk", sa.BigInteger(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.Column("owner", sa.String(ATTEMPT_OWNER_LENGTH), nullable=True),
        sa.Column("correlation_id", sa.String(CORRELATION_LENGTH), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        **dialect.table_options(),
    )
    sa.Index("tablequeue_attempts_tracking", attempts.c.tracking_id, attempts.c.id)
    sa.Index("tablequeue_attempts_queue", attempts.c.queue, attempts.c.id)
    housekeeping = sa.Table(
        HOUSEKEEPING_TABLE,
        metadata,
        sa.Column("queue", sa.String(QUEUE_NAME_LENGTH), primary_key=True),
        sa.Column("owner", sa.String(ATTEMPT_OWNER_LENGTH), nullable=True),
        sa.Column("lease_expires_at", UtcDateTime(), nullable=True),
        sa.Column("purged_at", UtcDateTime(), nullable=True),
        **dialect.table_options(),
    )
    return HistoryTables(results, attempts, housekeeping)


ROLLUP_TABLE = "tablequeue_rollup"
BUCKET_BOUNDS: tuple[float, ...] = (
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500,
    1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000,
)  # fmt: skip
"""Upper bounds (seconds, inclusive) of the latency buckets, 1-2.5-5 per decade from 10 ms to
about 28 hours; one more bucket counts everything slower."""
BUCKETS = len(BUCKET_BOUNDS) + 1
BUCKET_COLUMNS = tuple(f"latency_b{n:02d}" for n in range(BUCKETS))


def rollup_table(metadata: sa.MetaData) -> sa.Table:
    """The table, defined once per MetaData."""
    if ROLLUP_TABLE in metadata.tables:
        return metadata.tables[ROLLUP_TABLE]
    table = sa.Table(
        ROLLUP_TABLE,
        metadata,
        sa.Column("queue", sa.String(63), primary_key=True),
        sa.Column("minute", UtcDateTime(), primary_key=True),
        sa.Column("processed", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("failed", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("latency_sum", sa.Float(), nullable=False, server_default="0"),
        sa.Column("latency_max", sa.Float(), nullable=True),
        *(
            sa.Column(name, sa.BigInteger(), nullable=False, server_default="0")
            for name in BUCKET_COLUMNS
        ),
        sa.Column("last_id", sa.BigInteger(), nullable=True),
        sa.Column("backlog", sa.BigInteger(), nullable=True),
        sa.Column("enqueued", sa.BigInteger(), nullable=True),  # after 0.1.0: NULL in older rows
    )
    sa.Index(f"{ROLLUP_TABLE}_minute", table.c.minute)  # pruning, across queues
    return table


AUDIT_TABLE = "tablequeue_audit"


def audit_table(metadata: sa.MetaData, dialect: Dialect) -> sa.Table:
    """Who changed what through the API, the UI or the CLI (`storage.audit`)."""
    table = sa.Table(
        AUDIT_TABLE,
        metadata,
        dialect.id_column(),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.Column("who", sa.String(200), nullable=False),
        sa.Column("via", sa.String(16), nullable=False),
        sa.Column("address", sa.String(64), nullable=True),
        sa.Column("action", sa.String(40), nullable=False),
        sa.Column("queue", sa.String(63), nullable=True),
        sa.Column("target", sa.Text(), nullable=True),
        sa.Column("rows", sa.Integer(), nullable=True),
        **dialect.table_options(),
    )
    sa.Index("tablequeue_audit_at", table.c.at)
    sa.Index("tablequeue_audit_queue", table.c.queue, table.c.id)
    return table
