"""The shared default dialect: every operation runs the SQLAlchemy statements of `queries.py`.

An engine module subclasses `SqlDialect`, supplies the SQL parts (clock, upsert, locking hint,
per-row source, JSON paths) and overrides whole operations where its SQL differs.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.selectable import Select

from .. import names
from ..errors import InvalidInput
from .base import Capabilities, Dialect, JsonKind, JsonPath, LeasedRows, Rows, SweptLease
from .json_index import ExpressionIndexes, JsonIndexes
from .per_row import PerRow
from .queries import FinishOutcome, LeaseExpiredPolicy, Queries


class SqlDialect(abc.ABC):
    name: str
    url_schemes: dict[str, str]
    url_hint: str
    capabilities: Capabilities
    json_type: sa.types.TypeEngine[Any]
    json_index_strategy: type[JsonIndexes] = ExpressionIndexes
    # Messages per INSERT when a batch enqueue runs as executemany (no per-row source): the
    # page of SQLAlchemy's insertmanyvalues; None keeps its default (1,000).
    enqueue_page_rows: int | None = None

    @property
    def json_indexes(self) -> JsonIndexes:
        return self.json_index_strategy(self)

    # --- connecting and tables --------------------------------------------------------------

    def check_url(self, url: sa.URL) -> None:
        return None  # every URL of the engine's schemes

    def for_url(self, url: sa.URL) -> tuple[Dialect, sa.URL]:
        if "pooler" in url.query:
            raise InvalidInput(
                f"the URL parameter pooler= is for PostgreSQL behind PgBouncer; {self.name} "
                "URLs take no pooler: leave it out"
            )
        self.check_url(url)
        return cast("Dialect", self), url  # each engine's subclass is a whole Dialect

    def transaction_setup(self, statement_seconds: float | None) -> Callable[[Any], None] | None:
        return None  # connections keep their settings

    def id_column(self) -> sa.Column[int]:
        return sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True)

    def table_options(self) -> dict[str, Any]:
        return {}

    def partial_index_options(self, where: sa.ColumnElement[bool]) -> dict[str, Any]:
        return {f"{self.name}_where": where}

    def lease_index(self, table: sa.Table, name: str) -> sa.Index:
        leasable = table.c.status.in_(names.LEASABLE)
        return sa.Index(
            name,
            table.c.priority.desc(),
            table.c.process_after,
            table.c.id,
            **self.partial_index_options(leasable),
        )

    def connect_args(
        self, url: sa.URL, connect_seconds: float | None, statement_seconds: float | None
    ) -> dict[str, Any]:
        return {}

    def configure_engine(self, engine: Engine) -> None:
        return None  # SQLAlchemy's defaults

    def statement_cancelled(self, error: BaseException) -> bool:
        return False

    def tune_table(self, connection: Connection, table: sa.Table) -> None:
        return None  # the engine's defaults

    def lock_for_ddl(self, connection: Connection, key: str) -> None:
        return None  # the engine serializes schema changes itself

    # --- SQL parts --------------------------------------------------------------------------

    @abc.abstractmethod
    def now(self) -> sa.ColumnElement[datetime]: ...

    @abc.abstractmethod
    def seconds_from_now(self, seconds: sa.ColumnElement[Any]) -> sa.ColumnElement[datetime]: ...

    @abc.abstractmethod
    def json_scalar(
        self, column: sa.ColumnElement[Any], path: JsonPath, kind: JsonKind
    ) -> sa.ColumnElement[Any]: ...

    @abc.abstractmethod
    def json_is_null(
        self, column: sa.ColumnElement[Any], path: JsonPath
    ) -> sa.ColumnElement[bool]: ...

    def is_true(self, condition: sa.ColumnElement[bool]) -> sa.ColumnElement[bool]:
        return sa.type_coerce(sa.func.coalesce(condition, sa.false()), sa.Boolean())

    @abc.abstractmethod
    def insert(self, table: sa.Table) -> Insert: ...

    @abc.abstractmethod
    def excluded(self, insert: Insert) -> Any: ...

    @abc.abstractmethod
    def on_conflict_message_id(
        self, insert: Insert, set_: dict[str, Any], where: sa.ColumnElement[bool] | None
    ) -> Insert: ...

    @abc.abstractmethod
    def lock_candidates(self, select: Select[Any], lease_index: str) -> Select[Any]: ...

    @abc.abstractmethod
    def upsert(
        self, table: sa.Table, key: Sequence[str], values: dict[str, Any], update: Sequence[str]
    ) -> sa.Executable: ...

    def per_row(self, columns: Sequence[sa.ColumnClause[Any]]) -> sa.TableValuedAlias | None:
        return None  # executemany: one execution per message

    def per_row_parameters(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError  # only called when per_row gives a source

    def per_row_arrays(self, columns: Sequence[sa.ColumnClause[Any]]) -> sa.TableValuedAlias | None:
        return self.per_row(columns)

    def notify_when_returning(self, table_name: str) -> list[sa.ColumnElement[Any]]:
        return []

    # --- whole operations -------------------------------------------------------------------

    def queries(self, table: sa.Table, registry: sa.Table, rate_limits: sa.Table) -> Queries:
        return Queries(self, table, registry, rate_limits)

    def lease(
        self,
        connection: Connection,
        queries: Queries,
        *,
        queue: str,
        owner: str,
        batch_size: int,
        lease_seconds: float,
        correlation_id: str,
        limited: bool = False,
    ) -> LeasedRows:
        parameters = {
            "b_queue": queue,
            "b_n": batch_size,
            "b_lease": lease_seconds,
            "b_owner": owner,
            "b_cid": correlation_id,
        }
        return connection.execute(queries.lease(limited), parameters).all()

    def enqueue_round(
        self,
        connection: Connection,
        queries: Queries,
        *,
        queue: str,
        rows: Sequence[dict[str, Any]],
        upsert: bool,
        idempotent: bool,
    ) -> Rows:
        statement, per_row = (
            queries.upsert_by_message_id(idempotent) if upsert else queries.insert_new()
        )
        options: dict[str, Any] = {}
        if self.enqueue_page_rows is not None:
            options["insertmanyvalues_page_size"] = self.enqueue_page_rows
        params = per_row.params(rows, {"b_queue": queue})
        return connection.execute(statement, params, execution_options=options).all()

    def enqueue_alone(
        self,
        dbapi_connection: Any,
        queries: Queries,
        *,
        queue: str,
        rows: Sequence[dict[str, Any]],
        upsert: bool,
        idempotent: bool,
    ) -> Rows:
        raise NotImplementedError(f"{self.name} enqueues in a transaction")

    def finish(
        self,
        connection: Connection,
        queries: Queries,
        *,
        outcome: FinishOutcome | Literal["delete"],
        owner: str,
        rows: Sequence[dict[str, Any]],
    ) -> int:
        statement: sa.Executable
        if outcome == "delete":
            statement, per_row = queries.delete_done()
        elif outcome == "processed":
            statement, per_row = queries.mark_processed()
        else:
            statement, per_row = queries.reschedule()
        return _run(connection, statement, per_row, rows, owner)

    def fail(
        self,
        connection: Connection,
        queries: Queries,
        *,
        owner: str,
        rows: Sequence[dict[str, Any]],
    ) -> int:
        statement, per_row = queries.fail()
        return _run(connection, statement, per_row, rows, owner)

    def requeue_newer(
        self,
        connection: Connection,
        queries: Queries,
        *,
        owner: str,
        rows: Sequence[dict[str, Any]],
        default_status: str,
        completed: bool,
    ) -> int:
        statement, per_row = queries.requeue_newer_version(default_status, completed)
        return _run(connection, statement, per_row, rows, owner)

    def sweep(
        self,
        connection: Connection,
        queries: Queries,
        *,
        on_lease_expired: LeaseExpiredPolicy,
        max_attempts: int,
    ) -> tuple[list[SweptLease], int]:
        leases = queries.sweep_lapsed_leases(on_lease_expired, max_attempts)
        swept = list(connection.execute(leases).all())
        return swept, len(connection.execute(queries.expire()).all())

    def extend(
        self,
        connection: Connection,
        queries: Queries,
        *,
        owner: str,
        ids: Sequence[int],
        lease_seconds: float,
    ) -> set[int]:
        parameters = {"b_ids": list(ids), "b_owner": owner, "b_lease": lease_seconds}
        return set(connection.execute(queries.extend(), parameters).scalars())

    def held(
        self, connection: Connection, queries: Queries, *, owner: str, ids: Sequence[int]
    ) -> set[int]:
        parameters = {"b_ids": list(ids), "b_owner": owner}
        return set(connection.execute(queries.held(), parameters).scalars())

    def release(
        self, connection: Connection, queries: Queries, *, owner: str, ids: Sequence[int]
    ) -> int:
        parameters = {"b_ids": list(ids), "b_owner": owner}
        released = int(connection.execute(queries.release(), parameters).rowcount)
        if released:
            self.notify(connection, queries.table.name)
        return released

    def release_untracked(
        self,
        connection: Connection,
        queries: Queries,
        *,
        owner: str,
        tracked: Sequence[int],
        since: datetime,
    ) -> int:
        parameters = {"b_owner": owner, "b_tracked": list(tracked), "b_since": since}
        released = int(connection.execute(queries.release_untracked(), parameters).rowcount)
        if released:
            self.notify(connection, queries.table.name)
        return released

    def update_one(
        self,
        connection: Connection,
        table: sa.Table,
        where: sa.ColumnElement[bool],
        values: dict[str, Any],
    ) -> sa.Row[Any] | None:
        statement = sa.update(table).where(where).values(**values).returning(*table.c)
        return connection.execute(statement).first()

    def upsert_on_key(self, insert: Insert, key: str, columns: Sequence[str]) -> Insert | None:
        return None  # delete the old row first

    def accumulate(
        self,
        table: sa.Table,
        row: dict[str, Any],
        *,
        add: Sequence[str],
        largest: Sequence[str],
        smallest: Sequence[str],
        latest: Sequence[str],
    ) -> sa.Executable:
        insert = self.insert(table).values(**row)
        set_ = accumulated(table, self.excluded(insert), add, largest, smallest, latest)
        return self.on_conflict_key(insert, set_)

    def on_conflict_key(self, insert: Insert, set_: dict[str, Any]) -> Insert:
        """`insert`, updating the row with the same primary key by `set_` instead."""
        on_conflict = getattr(insert, "on_conflict_do_update")  # noqa: B009 (PostgreSQL, SQLite)
        table = insert.table
        assert isinstance(table, sa.Table)
        keys = [column.name for column in table.primary_key.columns]
        result: Insert = on_conflict(index_elements=keys, set_=set_)
        return result

    def delete_some(self, table: sa.Table, where: sa.ColumnElement[bool], limit: int) -> sa.Delete:
        chosen = sa.select(table.c.id).where(where).limit(limit).scalar_subquery()
        return sa.delete(table).where(table.c.id.in_(chosen))

    def backlog(self, connection: Connection, queries: Queries) -> tuple[int, Any, Any]:
        waiting, oldest, now = connection.execute(queries.backlog()).one()
        return int(waiting), oldest, now

    def count_by_status(
        self, connection: Connection, queries: Queries, exact: Sequence[str]
    ) -> tuple[dict[str, int], set[str]]:
        counted = connection.execute(queries.count_by_status())
        return {status: int(n) for status, n in counted}, set()

    def vacuum_if_bloated(self, engine: Engine, table: sa.Table) -> bool:
        return False

    # --- waking workers ---------------------------------------------------------------------

    def notify(self, connection: Connection, table_name: str) -> None:
        return None  # without notifications workers poll

    async def listen(self, url: sa.URL, table_name: str, wake: asyncio.Event) -> None:
        raise NotImplementedError(f"{self.name} has no notifications: workers poll")


def _run(
    connection: Connection,
    statement: sa.Executable,
    per_row: PerRow,
    rows: Sequence[dict[str, Any]],
    owner: str,
) -> int:
    return int(connection.execute(statement, per_row.params(rows, {"b_owner": owner})).rowcount)


def accumulated(
    table: sa.Table,
    new: Any,
    add: Sequence[str],
    largest: Sequence[str],
    smallest: Sequence[str],
    latest: Sequence[str],
) -> dict[str, Any]:
    """The assignments of `SqlDialect.accumulate`'s update: `new` are the written values."""
    set_: dict[str, Any] = {name: table.c[name] + new[name] for name in add}
    for name in largest:
        stored = table.c[name]
        larger = sa.or_(stored.is_(None), new[name] > stored)
        set_[name] = sa.case((larger, new[name]), else_=stored)
    for name in smallest:
        stored = table.c[name]
        smaller = sa.or_(stored.is_(None), new[name] < stored)
        set_[name] = sa.case((smaller, new[name]), else_=stored)
    for name in latest:
        set_[name] = sa.func.coalesce(new[name], table.c[name])
    return set_
