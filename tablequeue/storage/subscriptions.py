"""Publish/subscribe storage: `tablequeue_subscriptions`, one row per (topic, queue).

Rows of `origin` "spec" are written from the Queue spec's `subscriptions` at apply, in the same
transaction as the registry row (at most 100 per queue, the spec's bound); rows of `origin`
"runtime" are added and removed through `Database.subscribe`/`unsubscribe` and may expire
(`expires_at`, database clock): publishing skips an expired row at once, housekeeping deletes
it later. Apply rewrites only the spec's rows; a queue's deletion removes both kinds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..errors import SpecError
from ..models import TopicSubscription
from ..predicate import parse
from .schema import SUBSCRIPTION_ADDED_COLUMNS

if TYPE_CHECKING:
    from ..dialects import Dialect
    from ..spec import QueueSpec
    from .engine import Storage

SPEC = "spec"
RUNTIME = "runtime"


def ensure(storage: Storage, connection: Connection) -> None:
    """Create the table if it is missing, or add the columns a table made before runtime
    subscriptions lacks (its rows are the spec's). Idempotent; under the registry's DDL lock."""
    table = storage.subscriptions
    table.create(connection, checkfirst=True)
    present = {column["name"] for column in sa.inspect(connection).get_columns(table.name)}
    for name in SUBSCRIPTION_ADDED_COLUMNS:
        if name not in present:
            connection.exec_driver_sql(add_column_sql(table.c[name], connection.dialect))


def add_column_sql(column: sa.Column[Any], sql_dialect: sa.Dialect) -> str:
    """`ALTER TABLE t ADD <column>`, the column as the engine's DDL compiler renders it in
    CREATE TABLE (quoted, typed, its default and nullability)."""
    quote = sql_dialect.identifier_preparer.quote
    rendered = sa.schema.CreateColumn(column).compile(dialect=sql_dialect)
    return f"ALTER TABLE {quote(column.table.name)} ADD {rendered}"


def check(spec: QueueSpec) -> None:
    """Refuse a topic subscribed twice (the CRD's list map refuses it too) and a predicate
    that does not parse (PredicateError names it)."""
    topics = [subscription.topic for subscription in spec.subscriptions]
    twice = sorted({topic for topic in topics if topics.count(topic) > 1})
    if twice:
        raise SpecError(
            f"spec.subscriptions: topic {twice[0]!r} is subscribed twice: one subscription per "
            "topic (join the conditions with 'or')"
        )
    for number, subscription in enumerate(spec.subscriptions):
        if subscription.where is not None:
            try:
                parse(subscription.where)
            except ValueError as error:
                raise type(error)(
                    f"spec.subscriptions[{number}] (topic {subscription.topic!r}): {error}"
                ) from None


def write(storage: Storage, connection: Connection, queue_name: str, spec: QueueSpec) -> None:
    """Make the queue's spec rows those of its spec. Runtime rows stay while the spec allows
    runtime subscriptions (all go when it does not); a runtime row of a topic the spec now
    subscribes to gives way to the spec's."""
    table = storage.subscriptions
    mine = table.c.queue_name == queue_name
    if not spec.allows_runtime_subscriptions:
        connection.execute(table.delete().where(mine, table.c.origin == RUNTIME))
    wanted = {s.topic: s.where for s in spec.subscriptions}
    stored = {
        row.topic: row.where_text
        for row in connection.execute(
            sa.select(table.c.topic, table.c.where_text).where(mine, table.c.origin == SPEC)
        )
    }
    if stored == wanted:
        return
    replaced = table.c.origin == SPEC
    if wanted:
        replaced = sa.or_(replaced, table.c.topic.in_(list(wanted)))
    connection.execute(table.delete().where(mine, replaced))
    if wanted:
        connection.execute(
            table.insert(),
            [
                {"topic": t, "queue_name": queue_name, "where_text": w, "origin": SPEC}
                for t, w in wanted.items()
            ],
        )


def forget(storage: Storage, connection: Connection, queue_name: str) -> None:
    """Remove every subscription of the queue, the spec's and the runtime ones."""
    table = storage.subscriptions
    connection.execute(table.delete().where(table.c.queue_name == queue_name))


def stored(storage: Storage, connection: Connection, topic: str, queue_name: str) -> Any:
    """The row of (topic, queue), expired or not; None when there is none."""
    table = storage.subscriptions
    return connection.execute(
        sa.select(table).where(table.c.topic == topic, table.c.queue_name == queue_name)
    ).first()


def put_runtime(
    storage: Storage,
    connection: Connection,
    subscription: TopicSubscription,
) -> None:
    """Insert a runtime row, or replace the runtime row of the same topic and queue."""
    table = storage.subscriptions
    connection.execute(
        table.delete().where(
            table.c.topic == subscription.topic,
            table.c.queue_name == subscription.queue,
            table.c.origin == RUNTIME,
        )
    )
    connection.execute(
        table.insert().values(
            topic=subscription.topic,
            queue_name=subscription.queue,
            where_text=subscription.where,
            origin=RUNTIME,
            expires_at=subscription.expires_at,
        )
    )


def remove_runtime(storage: Storage, connection: Connection, topic: str, queue_name: str) -> int:
    """Delete the runtime row of (topic, queue): how many went (0 or 1)."""
    table = storage.subscriptions
    return connection.execute(
        table.delete().where(
            table.c.topic == topic, table.c.queue_name == queue_name, table.c.origin == RUNTIME
        )
    ).rowcount


def current(table: sa.Table, dialect: Dialect) -> sa.ColumnElement[bool]:
    """Rows that have not expired, by the database clock at the statement."""
    return sa.or_(table.c.expires_at.is_(None), table.c.expires_at > dialect.now())


def expired(table: sa.Table, dialect: Dialect, queue_name: str) -> sa.ColumnElement[bool]:
    """The queue's rows whose expiry has passed (housekeeping deletes them)."""
    return sa.and_(
        table.c.queue_name == queue_name,
        table.c.expires_at.is_not(None),
        table.c.expires_at <= dialect.now(),
    )


def _readable(storage: Storage, connection: Connection) -> tuple[list[Any], list[Any]] | None:
    """The columns to read and the filter of current rows; a table from before runtime
    subscriptions (until apply migrates it) holds only the spec's rows, none expiring. None
    when there is no table yet."""
    present = storage.subscription_columns(connection)
    if not present:
        return None
    table = storage.subscriptions
    if "expires_at" not in present:
        origin = sa.literal(SPEC, sa.String()).label("origin")
        return [origin, sa.null().label("expires_at")], []
    return [table.c.origin, table.c.expires_at], [current(table, storage.dialect)]


def listing(storage: Storage, connection: Connection, topic: str | None) -> list[TopicSubscription]:
    """The subscriptions that have not expired, of one topic or all, by topic and queue."""
    readable = _readable(storage, connection)
    if readable is None:
        return []
    extra, filters = readable
    table = storage.subscriptions
    statement = sa.select(table.c.topic, table.c.queue_name, table.c.where_text, *extra)
    if topic is not None:
        filters = [*filters, table.c.topic == topic]
    rows = connection.execute(statement.where(*filters).order_by(table.c.topic, table.c.queue_name))
    return [
        TopicSubscription(row.topic, row.queue_name, row.where_text, row.origin, row.expires_at)
        for row in rows
    ]


def subscribers_statement(
    storage: Storage, topic: str, filters: list[Any] | None = None
) -> sa.Select[Any]:
    """(queue name, table name, settings, where_text) of the queues subscribed to `topic`,
    by queue name, of the rows `filters` keep (by default: those that have not expired)."""
    table, registry = storage.subscriptions, storage.registry
    if filters is None:
        filters = [current(table, storage.dialect)]
    return (
        sa.select(registry.c.name, registry.c.table_name, registry.c.settings, table.c.where_text)
        .join(registry, registry.c.name == table.c.queue_name)
        .where(table.c.topic == topic, *filters)
        .order_by(registry.c.name)
    )


def subscribers(storage: Storage, connection: Connection, topic: str) -> list[Any]:
    """The rows of `subscribers_statement`; none when no queue was ever applied (no tables
    yet)."""
    readable = _readable(storage, connection)
    if readable is None:
        return []
    return list(connection.execute(subscribers_statement(storage, topic, readable[1])))
