"""The registry of a database's queues: creating and migrating their tables, their settings,
their default status, forgetting them."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import actor, indexes, names
from ..errors import Conflict, NotAQueueTable, QueueNotFound, QueueOwnedElsewhere, SchemaTooNew
from ..models import message_columns
from . import audit, readable_json, schedules, subscriptions
from .engine import Storage
from .flow_control import declared_pause, forget_rate_limit, sync_rate_limit
from .history import ensure_history
from .rollup import ensure_rollup
from .schema import (
    ADDED_COLUMNS,
    CORRELATION_COLUMNS,
    GROUP_COLUMNS,
    READABLE_JSON_VERSION,
    REGISTRY_READ_COLUMNS,
    SCHEMA_VERSION,
    SPEC_COLUMNS,
    migrate,
    migrate_registry,
)
from .urls import check_declared_dialect
from .workers import ensure_table as ensure_workers_table

if TYPE_CHECKING:
    from ..spec import QueueResource, QueueSpec


def ensure_registry(storage: Storage) -> None:
    """Create the registry, or migrate one made by an older tablequeue, in its own transaction
    (so that a refused apply does not undo it on engines whose DDL is not transactional)."""
    with storage.transaction() as connection:
        storage.dialect.lock_for_ddl(connection, "registry")
        storage.registry.create(connection, checkfirst=True)
        migrate_registry(connection, storage.registry)
        storage.rate_limits.create(connection, checkfirst=True)
        ensure_history(connection, storage.history)
        storage.audit.create(connection, checkfirst=True)
        ensure_workers_table(storage, connection)
        storage.schedules.create(connection, checkfirst=True)
        subscriptions.ensure(storage, connection)
        ensure_rollup(connection, storage.metadata)


def _check_owner(name: str, row: Any, owner: str | None) -> None:
    """A queue managed by one Queue resource is never taken over by another: two Queues of one
    name in different namespaces on one database would otherwise share a table."""
    if owner is not None and row is not None and row.owner not in (None, owner):
        raise QueueOwnedElsewhere(
            f"queue {name!r} on this database belongs to Queue {row.owner}: give this Queue "
            "another name or database"
        )


def check_owner(storage: Storage, name: str, owner: str) -> None:
    """Refuse (QueueOwnedElsewhere) to serve Queue resource `owner` a queue another one
    manages, as `apply` would; QueueNotFound when there is no such queue. A registry older
    than owners records none: its queues are anyone's to claim."""
    with storage.transaction() as connection:
        if not _registry_exists(storage, connection):
            raise QueueNotFound(f"queue {name!r} does not exist", storage.shown_url)
        registry = storage.registry
        columns = {c["name"] for c in sa.inspect(connection).get_columns(registry.name)}
        recorded = registry.c.owner if "owner" in columns else sa.null()
        row = connection.execute(
            sa.select(recorded.label("owner")).where(registry.c.name == name)
        ).first()
    if row is None:
        raise QueueNotFound(f"queue {name!r} does not exist", storage.shown_url)
    _check_owner(name, row, owner)


def _check_queue_table(connection: Connection, table_name: str) -> None:
    """An existing table becomes a queue only if it is one (e.g. kept by `Retain`)."""
    present = {column["name"] for column in sa.inspect(connection).get_columns(table_name)}
    missing = [
        column
        for column, _ in message_columns()
        if column not in present
        and column not in (*ADDED_COLUMNS, *CORRELATION_COLUMNS, *GROUP_COLUMNS)
    ]
    if missing:
        raise NotAQueueTable(
            f"table {table_name!r} exists and is not a queue table (no column "
            f"{', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): "
            "choose another spec.table or drop that table"
        )


def apply(
    storage: Storage,
    resource: QueueResource,
    owner: str | None = None,
    index_wait_seconds: float = indexes.WAIT_SECONDS,
) -> str:
    """Create or migrate the table and registry row: created, updated or unchanged.

    `owner` (`namespace/name`, from the operator) claims the queue for one Queue resource; the
    CLI applies without one and leaves the recorded owner as it is. The table's JSON indexes
    follow `spec.indexes`: new ones exist before the registry names them (PostgreSQL's are
    built CONCURRENTLY after it, which only delays their use), dropped ones go once it no
    longer does; a change of indexes alone makes the queue `updated`. While another apply
    builds indexes on the database (PostgreSQL), this one waits up to `index_wait_seconds`,
    then raises IndexBuildBusy (the operator waits 0 s and retries later)."""
    _rewrite_escaped_json(storage, resource, owner)
    outcome, created = _apply_table(storage, resource, owner)
    spec = resource.spec
    table_name = spec.table_for(resource.name)
    changes = indexes.sync(
        storage.engine, storage.dialect, table_name, spec.indexes, index_wait_seconds
    )
    if outcome == "unchanged" and (created or changes["created"] or changes["dropped"]):
        return "updated"
    return outcome


def _rewrite_escaped_json(storage: Storage, resource: QueueResource, owner: str | None) -> None:
    """Rewrite the escaped JSON of the queue's table (schema version 4 or older, or a kept
    table without a registry row) as written, before the registry records version 5, so that a
    run cut short is finished by the next apply (`readable_json`)."""
    if not storage.dialect.capabilities.stores_json_text:
        return
    name = names.queue_name(resource.name)
    registry = storage.registry
    ensure_registry(storage)
    with storage.transaction() as connection:
        row = connection.execute(sa.select(registry).where(registry.c.name == name)).first()
        _check_owner(name, row, owner)
        if row is not None:
            if row.schema_version >= READABLE_JSON_VERSION:
                return
            table_name = row.table_name
        else:
            table_name = resource.spec.table_for(name)
            if not sa.inspect(connection).has_table(table_name):
                return
            taken = sa.select(registry.c.name).where(registry.c.table_name == table_name)
            if connection.execute(taken).first() is not None:
                return  # another queue's table: apply refuses it
            _check_queue_table(connection, table_name)
    readable_json.rewrite_table(storage, storage.table(table_name))


def _apply_table(
    storage: Storage, resource: QueueResource, owner: str | None
) -> tuple[str, list[str]]:
    name = names.queue_name(resource.name)
    spec = resource.spec
    declared = spec.database.dialect if spec.database is not None else None
    check_declared_dialect(declared, storage.dialect, storage.shown_url)
    table_name = spec.table_for(name)
    subscriptions.check(spec)
    indexes.check(storage.dialect, spec.indexes)
    registry = storage.registry
    ensure_registry(storage)
    made = False
    try:
        with storage.transaction() as connection:
            storage.dialect.lock_for_ddl(connection, "registry")
            row = connection.execute(sa.select(registry).where(registry.c.name == name)).first()
            _check_registry_row(storage, connection, name, row, owner, table_name)
            made = _make_table(storage, connection, table_name, row)
            created = indexes.create_before_registry(
                connection, storage.dialect, table_name, spec.indexes
            )
            schedules.sync(connection, storage.schedules, storage.dialect, name, spec.schedules)
            subscriptions.write(storage, connection, name, spec)
            if row is None:
                _insert_registry_row(storage, connection, name, table_name, spec, owner)
                audit.record(storage, connection, "apply", name, {"created": True})
                return "created", created
            return _update_registry_row(storage, connection, name, row, spec, owner), created
    except Exception:
        if made:  # what failed is what the caller must see, not a failed clean-up
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                _drop_unregistered_table(storage, name, table_name)
        raise


def _drop_unregistered_table(storage: Storage, name: str, table_name: str) -> None:
    """After a failed apply that created the queue's table: where DDL commits at once
    (MariaDB) the rollback left it there, empty and named by no registry row, and the next
    apply would take it for a kept table of a deleted queue. Dropped when still so."""
    with storage.transaction() as connection:
        storage.dialect.lock_for_ddl(connection, "registry")
        registry = storage.registry
        registered = sa.select(registry.c.name).where(
            sa.or_(registry.c.name == name, registry.c.table_name == table_name)
        )
        if connection.execute(registered).first() is not None:
            return
        if not sa.inspect(connection).has_table(table_name):
            return  # the engine's rollback took it away
        table = storage.table(table_name)
        if connection.execute(sa.select(table.c.id).limit(1)).first() is None:
            table.drop(connection)


def _check_registry_row(
    storage: Storage,
    connection: Connection,
    name: str,
    row: Any,
    owner: str | None,
    table_name: str,
) -> None:
    """Refuse an apply the queue's registry row (or another queue's) rules out."""
    _check_owner(name, row, owner)
    if row is not None and row.schema_version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"queue {name!r} has schema version {row.schema_version}; this tablequeue "
            f"knows up to {SCHEMA_VERSION}: upgrade tablequeue"
        )
    if row is not None and row.table_name != table_name:
        raise Conflict(
            f"queue {name!r} already uses table {row.table_name!r}; "
            f"moving it to {table_name!r} is not supported"
        )
    registry = storage.registry
    other_queue = connection.execute(
        sa.select(registry.c.name).where(
            registry.c.table_name == table_name, registry.c.name != name
        )
    ).scalar()
    if other_queue is not None:
        raise Conflict(f"table {table_name!r} already belongs to queue {other_queue!r}")


def _make_table(storage: Storage, connection: Connection, table_name: str, row: Any) -> bool:
    """Create the queue table, or check and migrate the one there; tune its storage. True
    when it created the table."""
    table = storage.table(table_name)
    existed = sa.inspect(connection).has_table(table_name)
    if existed:
        _check_queue_table(connection, table_name)
    table.create(connection, checkfirst=True)
    if existed and (row is None or row.schema_version < SCHEMA_VERSION):
        # A kept table of a deleted queue has no registry row: assume the oldest this
        # engine had.
        oldest = storage.dialect.capabilities.first_schema_version
        migrate(connection, table, row.schema_version if row is not None else oldest)
    storage.dialect.tune_table(connection, table)
    return not existed


def _insert_registry_row(
    storage: Storage,
    connection: Connection,
    name: str,
    table_name: str,
    spec: QueueSpec,
    owner: str | None,
) -> None:
    now = datetime.now(UTC)
    connection.execute(
        storage.registry.insert().values(
            name=name,
            table_name=table_name,
            category=spec.category,
            default_status=spec.default_status,
            settings=spec_settings(spec),
            schema_version=SCHEMA_VERSION,
            created_at=now,
            updated_at=now,
            owner=owner,
            paused_at=declared_pause(storage, spec.paused),
            **spec_columns(spec),
        )
    )
    sync_rate_limit(storage, connection, name, spec.rate_limit, now)


def spec_columns(spec: QueueSpec) -> dict[str, Any]:
    """The registry's copy of the spec, which every lease reads (`schema.SPEC_COLUMNS`)."""
    return {column.name: column.of(spec) for column in SPEC_COLUMNS}


def _update_registry_row(
    storage: Storage,
    connection: Connection,
    name: str,
    row: Any,
    spec: QueueSpec,
    owner: str | None,
) -> str:
    """Bring the registry row up to the spec: "updated", or "unchanged" when it already is."""
    settings = spec_settings(spec)
    claims = owner is not None and row.owner is None
    if row.settings == settings and row.schema_version == SCHEMA_VERSION and not claims:
        return "unchanged"
    now = datetime.now(UTC)
    values: dict[str, Any] = {
        "category": spec.category,
        "settings": settings,
        "schema_version": SCHEMA_VERSION,
        "updated_at": now,
        **spec_columns(spec),
    }
    if claims:  # a queue made by the CLI or before owners were recorded
        values["owner"] = owner
    # The declared default status wins only when the declaration changed, so a status
    # set at runtime (admin UI, API) survives re-applying an unchanged spec.
    if row.settings.get("defaultStatus", "Pending") != spec.default_status:
        values["default_status"] = spec.default_status
    # The same rule for a pause: `queue pause`/`resume` at runtime hold until spec.paused
    # itself changes (a pause declared again keeps the time it began).
    if row.settings.get("paused", False) != spec.paused:
        if not spec.paused:
            values["paused_at"] = None
        elif row.paused_at is None:
            values["paused_at"] = declared_pause(storage, True)
    registry = storage.registry
    connection.execute(registry.update().where(registry.c.name == name).values(**values))
    if row.settings.get("rateLimit") != settings.get("rateLimit"):
        sync_rate_limit(storage, connection, name, spec.rate_limit, now)
    changed = {
        key: {"from": row.settings.get(key), "to": settings.get(key)}
        for key in sorted(set(row.settings) | set(settings))
        if row.settings.get(key) != settings.get(key)
    }
    if changed:  # a person's apply (the CLI) is recorded: a lowered retention deletes messages
        audit.record(storage, connection, "apply", name, {"changed": changed})
    return "updated"


def spec_settings(spec: QueueSpec) -> dict[str, Any]:
    """The settings stored in the registry: the spec as the user writes it."""
    return spec.model_dump(mode="json", by_alias=True, exclude_unset=True)


def registry_row(storage: Storage, connection: Connection, name: str) -> Any:
    """The registry row of a queue, or None."""
    registry = storage.registry
    columns = [registry.c[column] for column in REGISTRY_READ_COLUMNS]
    return connection.execute(sa.select(*columns).where(registry.c.name == name)).first()


def find_registry_row(storage: Storage, connection: Connection, name: str) -> Any:
    """The registry row of a queue, or None (also when there is no registry yet)."""
    if not _registry_exists(storage, connection):
        return None
    return registry_row(storage, connection, name)


def _registry_exists(storage: Storage, connection: Connection) -> bool:
    return sa.inspect(connection).has_table(storage.registry.name)


def queues(storage: Storage) -> list[dict[str, Any]]:
    with storage.transaction() as connection:
        if not _registry_exists(storage, connection):
            return []
        registry = storage.registry
        columns = [registry.c[column] for column in REGISTRY_READ_COLUMNS]
        rows = connection.execute(sa.select(*columns).order_by(registry.c.name))
        return [dict(row._mapping) for row in rows]


def default_status(storage: Storage, connection: Connection, name: str) -> str:
    registry = storage.registry
    status = connection.execute(
        sa.select(registry.c.default_status).where(registry.c.name == name)
    ).scalar()
    if status is None:
        raise QueueNotFound(f"queue {name!r} was deleted")
    return str(status)


def default_status_of(storage: Storage, name: str) -> str:
    """The status new messages of this queue get now (it may be changed at runtime)."""
    with storage.transaction() as connection:
        return default_status(storage, connection, name)


def set_default_status(storage: Storage, name: str, status: str) -> None:
    names.settable_status(status)
    registry = storage.registry
    with storage.transaction() as connection:
        updated = connection.execute(
            registry.update()
            .where(registry.c.name == name)
            .values(default_status=status, updated_at=datetime.now(UTC))
        ).rowcount
        if updated:
            audit.record(storage, connection, "set-default-status", name, {"status": status})
    if not updated:
        raise QueueNotFound(f"queue {name!r} does not exist", storage.shown_url)


def delete_queue(storage: Storage, name: str, drop_table: bool, owner: str | None = None) -> bool:
    """Forget a queue; drop its table only when asked (deletionPolicy: Delete).

    With `owner` (the operator's `namespace/name`) only a queue that Queue owns is touched: the
    answer is False, and nothing changes, when another resource owns it or none recorded one."""
    registry = storage.registry
    with storage.transaction() as connection:
        storage.dialect.lock_for_ddl(connection, "registry")
        row = None
        if _registry_exists(storage, connection):
            migrate_registry(connection, registry)
            storage.rate_limits.create(connection, checkfirst=True)
            row = connection.execute(sa.select(registry).where(registry.c.name == name)).first()
        if row is None:
            raise QueueNotFound(f"queue {name!r} does not exist", storage.shown_url)
        if owner is not None and row.owner != owner:
            return False
        connection.execute(registry.delete().where(registry.c.name == name))
        _mark_for_housekeeping(storage, connection, name)
        forget_rate_limit(storage, connection, name)
        if sa.inspect(connection).has_table(storage.schedules.name):
            schedules.forget(connection, storage.schedules, name)
        if storage.has_subscriptions_table(connection):
            subscriptions.forget(storage, connection, name)
        dropped = None
        if drop_table:
            table = storage.table(row.table_name)
            if actor.current() is not None and sa.inspect(connection).has_table(table.name):
                dropped = connection.execute(sa.select(sa.func.count()).select_from(table)).scalar()
            table.drop(connection, checkfirst=True)
        audit.record(
            storage, connection, "delete-queue", name, {"dropTable": drop_table or None}, dropped
        )
    return True


def _mark_for_housekeeping(storage: Storage, connection: Connection, name: str) -> None:
    """Leave the deleted queue a housekeeping row: while the queue stays unregistered, any
    queue's housekeeper deletes its results and attempts, then the row (`queue.retention`)."""
    housekeeping = storage.history.housekeeping
    if not sa.inspect(connection).has_table(housekeeping.name):
        return
    marked = sa.select(housekeeping.c.queue).where(housekeeping.c.queue == name)
    if connection.execute(marked).first() is None:
        connection.execute(sa.insert(housekeeping).values(queue=name))
