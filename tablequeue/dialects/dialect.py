"""What the queue and the storage ask of a database engine, and the shared way of doing it.

`Dialect` is the one contract: the engine's URLs, table layout and capabilities, the SQL parts
predicates and statements are made of (`SqlParts`), and whole operations on the hot paths
(lease, enqueue, finish, fail, requeue, sweep, listen). Its methods run the shared SQLAlchemy
Core statements of `queries/`, which PostgreSQL and SQLite use as they are; an engine
package (`postgresql/`, `sqlite/`, `mariadb/`, `mssql/`) subclasses it, supplies the abstract
SQL parts and overrides whole operations where its SQL differs, each override saying why.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.dml import Insert

from .. import names
from ..errors import InvalidInput
from .json_index import ExpressionIndexes, JsonIndexes
from .parts import SqlParts
from .per_row import PerRow
from .queries import Queries
from .types import (
    Capabilities,
    EnqueueBatch,
    FinishOutcome,
    LeasedRows,
    LeaseExpiredPolicy,
    LeaseRequest,
    Rows,
    SettleRequest,
    SweptLease,
    TenantUrlRules,
    group_parameters,
)


class Dialect(SqlParts):
    url_schemes: dict[str, str]
    """URL schemes users write -> the scheme tablequeue connects with, driver included."""
    url_hint: str
    """How a URL of this engine begins, in error messages (`sqlite:///`)."""
    capabilities: Capabilities
    json_type: sa.types.TypeEngine[Any]
    """Column type of `message`, `previous_message`, `headers`, `result`, `progress`."""
    json_index_strategy: type[JsonIndexes] = ExpressionIndexes
    """How this engine indexes JSON body paths (`spec.indexes`)."""
    enqueue_page_rows: int | None = None
    """Messages per INSERT when a batch enqueue runs as executemany (no per-row source): the
    page of SQLAlchemy's insertmanyvalues; None keeps its default (1,000)."""

    @property
    def json_indexes(self) -> JsonIndexes:
        return self.json_index_strategy(self)

    # --- connecting and tables --------------------------------------------------------------

    def check_url(self, url: sa.URL) -> None:
        """Raise InvalidInput for a URL of this engine that tablequeue cannot use; by default
        every URL of the engine's schemes is fine."""

    def for_url(self, url: sa.URL) -> tuple[Dialect, sa.URL]:
        """The dialect set up for a URL's tablequeue parameters (PostgreSQL's `?pooler=`),
        and the URL without them, as the driver gets it; InvalidInput for a bad one."""
        if "pooler" in url.query:
            raise InvalidInput(
                f"the URL parameter pooler= is for PostgreSQL behind PgBouncer; {self.name} "
                "URLs take no pooler: leave it out"
            )
        self.check_url(url)
        return self, url

    def tenant_url_rules(self, url: sa.URL) -> TenantUrlRules:
        """What a tenant's URL for this engine may hold (`storage.tenant_urls`); by default no
        query parameter and no host (SQLite: a file of the operator's, allowed by it alone)."""
        return TenantUrlRules(needs_host=False)

    def transaction_setup(self, statement_seconds: float | None) -> Callable[[Any], None] | None:
        """What to run on the driver connection at the start of each transaction, for
        settings a connection cannot keep (behind a transaction pooler); None: nothing."""
        return None

    def id_column(self) -> sa.Column[int]:
        """The `id` primary key: a 64-bit number the database assigns, never reused."""
        return sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True)

    def table_options(self) -> dict[str, Any]:
        """Engine-specific keyword arguments of a queue table (`sa.Table(..., **options)`)."""
        return {}

    def lease_index(self, table: sa.Table, name: str) -> sa.Index:
        """The index the lease statement reads due messages in lease order from."""
        leasable = table.c.status.in_(names.LEASABLE)
        return sa.Index(
            name,
            table.c.priority.desc(),
            table.c.process_after,
            table.c.id,
            **self.partial_index_options(leasable),
        )

    def configure_engine(self, engine: Engine) -> None:
        """Install per-connection settings (pragmas, transaction mode); none by default."""

    def connect_args(
        self, url: sa.URL, connect_seconds: float | None, statement_seconds: float | None
    ) -> dict[str, Any]:
        """The driver's connect arguments that bound connecting and each statement (None: no
        bound); a parameter the URL sets itself wins."""
        return {}

    def statement_cancelled(self, error: BaseException) -> bool:
        """Whether a driver error says the server cancelled a statement past its time bound."""
        return False

    def deadlocked(self, error: BaseException) -> bool:
        """Whether a driver error says the server rolled the transaction back as a deadlock's
        victim (nothing of it happened: it may run again)."""
        return False

    def tune_table(self, connection: Connection, table: sa.Table) -> None:
        """Storage settings of a queue table, applied at every `apply` (idempotent); none by
        default."""

    def lock_for_ddl(self, connection: Connection, key: str) -> None:
        """Serialize schema changes for `key` across processes, for this transaction; by
        default the engine serializes schema changes itself."""

    @abc.abstractmethod
    def identity(self, connection: Connection) -> tuple[Any, ...]:
        """What identifies the database a connection works in (server, database, schema):
        equal for two connections exactly when they reach the same queue tables."""

    @abc.abstractmethod
    def autocommits(self, dbapi_connection: Any) -> bool:
        """True when a statement on this driver connection (the caller's) would commit on its
        own: autocommit on and no transaction open."""

    # --- whole operations of the hot paths --------------------------------------------------

    def queries(self, table: sa.Table, registry: sa.Table, rate_limits: sa.Table) -> Queries:
        """The statements of one queue table (made once per table and kept)."""
        return Queries(self, table, registry, rate_limits)

    def lease(self, connection: Connection, queries: Queries, request: LeaseRequest) -> LeasedRows:
        """Lease up to `batch_size` due messages; every column of each leased row. None while
        the queue is paused or, unless the caller took tokens for them (`rate_limited`),
        rate-limited, or, unless the caller counted them against it (`concurrency_limited`),
        held to a global concurrency (`Queries.flow_gate`)."""
        parameters = {
            "b_queue": request.queue,
            "b_n": request.batch_size,
            "b_lease": request.lease_seconds,
            "b_owner": request.owner,
            "b_cid": request.correlation_id,
        }
        statement = queries.lease(request.rate_limited, request.concurrency_limited, request.group)
        return self.hot_rows(connection, queries, statement, parameters | group_parameters(request))

    def hot_rows(
        self,
        connection: Connection,
        queries: Queries,
        statement: sa.Executable,
        parameters: dict[str, Any],
    ) -> Sequence[Sequence[Any]]:
        """Run one of the worker cycle's statements (a lease, an outcome); the rows it
        returns, in the order of its RETURNING columns."""
        return connection.execute(statement, parameters).all()

    def hot_count(
        self,
        connection: Connection,
        queries: Queries,
        statement: sa.Executable,
        parameters: dict[str, Any] | list[dict[str, Any]],
    ) -> int:
        """Run one of the worker cycle's statements that returns nothing; the rows it changed."""
        return int(connection.execute(statement, parameters).rowcount)

    def enqueue_round(self, connection: Connection, queries: Queries, batch: EnqueueBatch) -> Rows:
        """Insert (or upsert by messageId, as `batch.dedupe` says) messages with distinct
        identities, waking listeners; (id, message_id, tracking_id, version, status) of each row
        written (none for a row left as it was)."""
        statement, per_row = (
            queries.upsert_by_message_id(batch.idempotent, batch.dedupe)
            if batch.upsert
            else queries.insert_new()
        )
        options: dict[str, Any] = {}
        if self.enqueue_page_rows is not None:
            options["insertmanyvalues_page_size"] = self.enqueue_page_rows
        params = per_row.params(batch.rows, batch.shared_parameters())
        return connection.execute(statement, params, execution_options=options).all()

    def enqueue_autocommit(
        self, dbapi_connection: Any, queries: Queries, batch: EnqueueBatch
    ) -> Rows:
        """`enqueue_round` as one statement of its own on a DB-API connection in autocommit
        mode (engines with `capabilities.enqueues_in_autocommit`): the statement compiled once,
        run on the driver directly; rows with the same attributes as `enqueue_round`'s."""
        raise NotImplementedError(f"{self.name} enqueues in a transaction")

    def finish(
        self,
        connection: Connection,
        queries: Queries,
        outcome: FinishOutcome,
        settlement: SettleRequest,
    ) -> int:
        """Record completions still held at the version leased; the number recorded."""
        statement: sa.Executable
        if outcome == "delete":
            statement, per_row = queries.delete_done()
        elif outcome == "processed":
            statement, per_row = queries.mark_processed()
        else:
            statement, per_row = queries.reschedule()
        return self._settle(connection, queries, statement, per_row, settlement)

    def fail(self, connection: Connection, queries: Queries, settlement: SettleRequest) -> int:
        """Record failures still held at the version leased; the number recorded."""
        statement, per_row = queries.fail()
        return self._settle(connection, queries, statement, per_row, settlement)

    def requeue_newer(
        self,
        connection: Connection,
        queries: Queries,
        settlement: SettleRequest,
        *,
        default_status: str,
        completed: bool,
    ) -> int:
        """Requeue messages held at an older version than stored; the number requeued."""
        statement, per_row = queries.requeue_newer_version(default_status, completed)
        return self._settle(connection, queries, statement, per_row, settlement)

    def _settle(
        self,
        connection: Connection,
        queries: Queries,
        statement: sa.Executable,
        per_row: PerRow,
        settlement: SettleRequest,
    ) -> int:
        parameters = per_row.params(settlement.rows, {"b_owner": settlement.owner})
        return self.hot_count(connection, queries, statement, parameters)

    def sweep(
        self,
        connection: Connection,
        queries: Queries,
        *,
        on_lease_expired: LeaseExpiredPolicy,
        max_attempts: int,
    ) -> tuple[list[SweptLease], int]:
        """Settle lapsed leases and expire messages: each swept lease (its new status, id,
        tracking id, owner, correlation id, attempts), and the number of messages expired."""
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
        """Extend the leases `owner` still holds; the ids extended."""
        parameters = {"b_ids": list(ids), "b_owner": owner, "b_lease": lease_seconds}
        return set(connection.execute(queries.extend(), parameters).scalars())

    def held(
        self, connection: Connection, queries: Queries, *, owner: str, ids: Sequence[int]
    ) -> set[int]:
        """Which of `ids` `owner` still holds."""
        parameters = {"b_ids": list(ids), "b_owner": owner}
        return set(connection.execute(queries.held(), parameters).scalars())

    def release(
        self, connection: Connection, queries: Queries, *, owner: str, ids: Sequence[int]
    ) -> int:
        """Give back unstarted leases and wake listeners; the number released."""
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
        """Give back, as `release` does, the leases `owner` took at or after `since` (database
        clock) that are not among `tracked`; wake listeners; the number released."""
        parameters = {"b_owner": owner, "b_tracked": list(tracked), "b_since": since}
        released = int(connection.execute(queries.release_untracked(), parameters).rowcount)
        if released:
            self.notify(connection, queries.table.name)
        return released

    # --- admin statements -------------------------------------------------------------------

    def update_one(
        self,
        connection: Connection,
        table: sa.Table,
        where: sa.ColumnElement[bool],
        values: dict[str, Any],
    ) -> sa.Row[Any] | None:
        """Update the one row `where` chooses (by id or tracking id); the row as updated, or
        None when no row matched."""
        statement = sa.update(table).where(where).values(**values).returning(*table.c)
        return connection.execute(statement).first()

    def upsert_on_key(self, insert: Insert, key: str, columns: Sequence[str]) -> Insert | None:
        """Turn the insert into an upsert on the primary key `key` that replaces `columns`
        with the new row's, or None when the engine has none (then delete first)."""
        return None

    def accumulate(
        self,
        table: sa.Table,
        row: dict[str, Any],
        *,
        add: Sequence[str],
        largest: Sequence[str],
        latest: Sequence[str],
    ) -> sa.Executable:
        """Insert `row`, or update the row with its primary key: the `add` columns add the new
        value to the stored one (a stored NULL counts as 0), `largest` keep the larger, `latest`
        take the new value unless it is NULL (counters written by many processes at once, as
        by the chart rollup)."""
        insert = self.insert(table).values(**row)
        set_ = accumulated(table, self.excluded(insert), add, largest, latest)
        return self.on_conflict_key(insert, set_)

    def on_conflict_key(self, insert: Insert, set_: dict[str, Any]) -> Insert:
        """`insert`, updating the row with the same primary key by `set_` instead (what
        `accumulate` writes with; an engine whose `accumulate` is its own needs none)."""
        raise NotImplementedError(f"{self.name} writes accumulate its own way")

    def delete_some(self, table: sa.Table, where: sa.ColumnElement[bool], limit: int) -> sa.Delete:
        """A DELETE of at most `limit` rows matching `where` (bounded purges)."""
        chosen = sa.select(table.c.id).where(where).limit(limit).scalar_subquery()
        return sa.delete(table).where(table.c.id.in_(chosen))

    def backlog(self, connection: Connection, queries: Queries) -> tuple[int, Any, Any]:
        """Due messages: their number, the oldest due time, the database's clock (raw)."""
        waiting, oldest, now = connection.execute(queries.backlog()).one()
        return int(waiting), oldest, now

    def count_by_status(
        self, connection: Connection, queries: Queries, exact: Sequence[str]
    ) -> tuple[dict[str, int], set[str]]:
        """Messages per status, and the statuses whose count is an estimate (never `exact`)."""
        counted = connection.execute(queries.count_by_status())
        return {status: int(n) for status, n in counted}, set()

    def vacuum_if_bloated(self, engine: Engine, table: sa.Table) -> bool:
        """Reclaim finished messages' space now if enough of the table is dead and no other
        process is doing it; True when it vacuumed."""
        return False

    # --- waking workers ---------------------------------------------------------------------

    def notify(self, connection: Connection, table_name: str) -> None:
        """Wake workers listening on this queue when the transaction commits (if supported);
        without notifications workers poll."""

    async def listen(self, url: sa.URL, table_name: str, wake: asyncio.Event) -> None:
        """Set `wake` whenever messages of the table become available; reconnect when the
        connection is lost. Runs until cancelled. Only when `capabilities.notifies`."""
        raise NotImplementedError(f"{self.name} has no notifications: workers poll")


def accumulated(
    table: sa.Table,
    new: Any,
    add: Sequence[str],
    largest: Sequence[str],
    latest: Sequence[str],
) -> dict[str, Any]:
    """The assignments of `Dialect.accumulate`'s update: `new` are the written values."""
    set_: dict[str, Any] = {
        name: (sa.func.coalesce(table.c[name], 0) if table.c[name].nullable else table.c[name])
        + new[name]
        for name in add
    }
    for name in largest:
        stored = table.c[name]
        larger = sa.or_(stored.is_(None), new[name] > stored)
        set_[name] = sa.case((larger, new[name]), else_=stored)
    for name in latest:
        set_[name] = sa.func.coalesce(new[name], table.c[name])
    return set_
