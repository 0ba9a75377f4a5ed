"""Connecting to a database by URL, and the registry of the queues it holds.

URLs as users write them: `postgresql://user:pass@host/db` (psycopg 3 underneath),
`postgresql+psycopg://...`, `postgres://...`, `sqlite:///path/to/file.db`.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from . import names
from .dialects import Dialect, for_backend
from .errors import (
    Conflict,
    DatabaseUnavailable,
    InvalidInput,
    MessageNotFound,
    QueueNotFound,
    SchemaTooNew,
)
from .models import Message, canonical_json
from .schema import SCHEMA_VERSION, migrate, queue_table, registry_table

if TYPE_CHECKING:
    from .queue import Queue
    from .spec import QueueResource, QueueSpec

_SCHEME_ALIASES = {
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "postgresql+psycopg": "postgresql+psycopg",
    "sqlite": "sqlite",
    "sqlite+pysqlite": "sqlite",
}


def parse_url(url: str) -> sa.URL:
    """Validate a database URL and pick the driver tablequeue uses for it."""
    try:
        parsed = sa.make_url(url)
    except Exception:
        raise InvalidInput(
            "invalid database URL: expected e.g. postgresql://user:password@host:5432/db "
            "or sqlite:///path/to/file.db"
        ) from None
    scheme = _SCHEME_ALIASES.get(parsed.drivername)
    if scheme is None:
        raise InvalidInput(
            f"unsupported database URL scheme {parsed.drivername!r} in "
            f"{parsed.render_as_string(hide_password=True)}: use postgresql:// or sqlite:///"
        )
    if scheme == "sqlite" and parsed.database in (None, "", ":memory:"):
        raise InvalidInput("an in-memory SQLite database cannot be shared: use sqlite:///FILE.db")
    return parsed.set(drivername=scheme)


PING_AFTER_IDLE_SECONDS = 1.0


def _ping_when_idle(engine: Engine) -> None:
    """Test a pooled connection before use when it sat idle (the database may have restarted
    meanwhile); a dead one is replaced. Busy connections skip the round trip that SQLAlchemy's
    pool_pre_ping would spend on every transaction."""

    @sa.event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @sa.event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_SECONDS:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as error:
            raise sa.exc.DisconnectionError(str(error)) from error  # the pool reconnects


def _first_line(error: BaseException) -> str:
    text = str(getattr(error, "orig", None) or error).strip()
    return text.splitlines()[0].strip() if text else type(error).__name__


class Database:
    """A database that holds queues: one engine, one dialect, the registry table."""

    def __init__(self, url: str, **engine_options: Any) -> None:
        self.url = parse_url(url)
        self.shown_url = sa.make_url(url).render_as_string(hide_password=True)
        self.dialect: Dialect = for_backend(self.url.get_backend_name())
        options: dict[str, Any] = {"json_serializer": canonical_json}
        options.update(engine_options)
        self.engine: Engine = sa.create_engine(self.url, **options)
        _ping_when_idle(self.engine)
        self.dialect.configure_engine(self.engine)
        self.metadata = sa.MetaData()
        self.registry = registry_table(self.metadata)
        self._tables: dict[str, sa.Table] = {}
        self._tables_lock = threading.Lock()
        self.statements: dict[tuple[Any, ...], Any] = {}
        """The hot statements of each queue table, built once (see Queue._built)."""

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction; an unreachable database becomes one clear DatabaseUnavailable."""
        try:
            connection = self.engine.connect()
        except sa.exc.DBAPIError as error:
            raise DatabaseUnavailable(
                f"cannot connect to {self.shown_url}: {_first_line(error)}"
            ) from None
        try:
            with connection.begin():
                yield connection
        except sa.exc.DBAPIError as error:
            if error.connection_invalidated:
                raise DatabaseUnavailable(
                    f"lost connection to {self.shown_url}: {_first_line(error)}"
                ) from error
            raise
        finally:
            connection.close()

    def ping(self) -> None:
        with self.transaction() as connection:
            connection.execute(sa.select(1))

    def table(self, table_name: str) -> sa.Table:
        with self._tables_lock:  # threads share the MetaData
            if table_name not in self._tables:
                self._tables[table_name] = queue_table(self.metadata, table_name, self.dialect)
            return self._tables[table_name]

    # --- registry ---------------------------------------------------------------------------

    def apply(self, resource: QueueResource) -> str:
        """Create or migrate the table and registry row: created, updated or unchanged."""
        name = names.queue_name(resource.name)
        spec = resource.spec
        table_name = spec.table_for(name)
        settings = spec_settings(spec)
        with self.transaction() as connection:
            self.dialect.lock_for_ddl(connection, "registry")
            self.registry.create(connection, checkfirst=True)
            row = self._registry_row(connection, name)
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
            owner = connection.execute(
                sa.select(self.registry.c.name).where(
                    self.registry.c.table_name == table_name, self.registry.c.name != name
                )
            ).scalar()
            if owner is not None:
                raise Conflict(f"table {table_name!r} already belongs to queue {owner!r}")
            table = self.table(table_name)
            existed = sa.inspect(connection).has_table(table_name)
            table.create(connection, checkfirst=True)
            if existed and (row is None or row.schema_version < SCHEMA_VERSION):
                # A kept table of a deleted queue has no registry row: assume the oldest.
                migrate(connection, table, row.schema_version if row is not None else 1)
            self.dialect.tune_table(connection, table)
            now = datetime.now(UTC)
            if row is None:
                connection.execute(
                    self.registry.insert().values(
                        name=name,
                        table_name=table_name,
                        category=spec.category,
                        default_status=spec.default_status,
                        settings=settings,
                        schema_version=SCHEMA_VERSION,
                        created_at=now,
                        updated_at=now,
                    )
                )
                return "created"
            if row.settings == settings and row.schema_version == SCHEMA_VERSION:
                return "unchanged"
            values: dict[str, Any] = {
                "category": spec.category,
                "settings": settings,
                "schema_version": SCHEMA_VERSION,
                "updated_at": now,
            }
            # The declared default status wins only when the declaration changed, so a status
            # set at runtime (admin UI, API) survives re-applying an unchanged spec.
            if row.settings.get("defaultStatus", "Pending") != spec.default_status:
                values["default_status"] = spec.default_status
            connection.execute(
                self.registry.update().where(self.registry.c.name == name).values(**values)
            )
            return "updated"

    def _registry_row(self, connection: Connection, name: str) -> Any:
        return connection.execute(
            sa.select(self.registry).where(self.registry.c.name == name)
        ).first()

    def _registry_exists(self, connection: Connection) -> bool:
        return sa.inspect(connection).has_table(self.registry.name)

    def queue(self, name: str) -> Queue:
        """A handle on an existing queue, with the settings it was applied with."""
        from .queue import Queue
        from .spec import QueueSpec

        names.queue_name(name)
        with self.transaction() as connection:
            row = (
                self._registry_row(connection, name) if self._registry_exists(connection) else None
            )
        if row is None:
            raise QueueNotFound(
                f"queue {name!r} does not exist in {self.shown_url}: "
                "create it with `tablequeue queue apply -f FILE`"
            )
        spec = QueueSpec.model_validate(row.settings)
        return Queue(self, name, self.table(row.table_name), spec)

    def queues(self) -> list[dict[str, Any]]:
        with self.transaction() as connection:
            if not self._registry_exists(connection):
                return []
            rows = connection.execute(sa.select(self.registry).order_by(self.registry.c.name))
            return [dict(row._mapping) for row in rows]

    def find_job(self, tracking_id: str) -> tuple[Queue, Message]:
        """The queue and message a tracking id belongs to, searching every queue."""
        try:
            uuid.UUID(tracking_id)
        except ValueError:
            raise InvalidInput(
                f"invalid tracking id {tracking_id[:80]!r}: expected a UUID"
            ) from None
        for row in self.queues():
            queue = self.queue(row["name"])
            with contextlib.suppress(MessageNotFound):
                return queue, queue.get_by_tracking_id(tracking_id)
        raise MessageNotFound(f"no message with tracking id {tracking_id} in any queue")

    def default_status(self, connection: Connection, name: str) -> str:
        status = connection.execute(
            sa.select(self.registry.c.default_status).where(self.registry.c.name == name)
        ).scalar()
        if status is None:
            raise QueueNotFound(f"queue {name!r} was deleted")
        return str(status)

    def default_status_of(self, name: str) -> str:
        """The status new messages of this queue get now (it may be changed at runtime)."""
        with self.transaction() as connection:
            return self.default_status(connection, name)

    def set_default_status(self, name: str, status: str) -> None:
        names.settable_status(status)
        with self.transaction() as connection:
            updated = connection.execute(
                self.registry.update()
                .where(self.registry.c.name == name)
                .values(default_status=status, updated_at=datetime.now(UTC))
            ).rowcount
        if not updated:
            raise QueueNotFound(f"queue {name!r} does not exist in {self.shown_url}")

    def delete_queue(self, name: str, drop_table: bool) -> None:
        """Forget a queue; drop its table only when asked (deletionPolicy: Delete)."""
        with self.transaction() as connection:
            self.dialect.lock_for_ddl(connection, "registry")
            row = (
                self._registry_row(connection, name) if self._registry_exists(connection) else None
            )
            if row is None:
                raise QueueNotFound(f"queue {name!r} does not exist in {self.shown_url}")
            connection.execute(self.registry.delete().where(self.registry.c.name == name))
            if drop_table:
                self.table(row.table_name).drop(connection, checkfirst=True)


def spec_settings(spec: QueueSpec) -> dict[str, Any]:
    """The settings stored in the registry: the spec as the user writes it."""
    return spec.model_dump(mode="json", by_alias=True, exclude_unset=True)


def connect(url: str, **engine_options: Any) -> Database:
    return Database(url, **engine_options)
