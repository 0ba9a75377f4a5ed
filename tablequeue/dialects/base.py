"""What the queue and the storage ask of a database engine: whole operations on the hot paths
(lease, enqueue round, finish, fail, requeue, sweep, listen), the engine's URLs, table layout
and capabilities, and the SQL parts predicates and admin statements are made of.

`sql.SqlDialect` implements it with SQLAlchemy Core statements (`queries.py`), which PostgreSQL
and SQLite share; an engine whose SQL differs (no UPDATE ... RETURNING, OUTPUT inserted.*)
overrides whole operations.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.dml import Insert

from .queries import FinishOutcome, LeaseExpiredPolicy, Queries

if TYPE_CHECKING:
    from .json_index import JsonIndexes

JsonKind = Literal["string", "number", "boolean"]
JsonPath = Sequence[str | int]
Rows = Sequence[sa.Row[*tuple[Any, ...]]]
LeasedRows = Sequence[Sequence[Any]]
SweptLease = sa.Row[Any]
"""A lease the sweep settled: `status` (its new one), `id`, `tracking_id`, `lease_owner`,
`correlation_id`, `attempts`."""
"""Every column of each leased row, in table order (`Message(*row)`)."""


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do beyond the conformance suite's common ground."""

    notifies: bool
    """Enqueues and releases wake listening workers (`Dialect.listen`); else workers poll."""
    estimates_counts: bool
    """Stats may estimate the count of a huge finished status from table statistics."""
    vacuums: bool
    """`vacuum_if_bloated` can reclaim dead rows' space (else the engine reuses it itself)."""
    folds_writes: bool = False
    """Data-modifying statements nest in one statement (`WITH done AS (DELETE ... RETURNING)
    INSERT ...`): recording a result costs no extra round trip."""
    one_writer: bool = False
    """One write transaction at a time in the whole database (SQLite): a lease waits while
    another connection's transaction that wrote is open."""
    enqueues_alone: bool = False
    """An enqueue of messages with distinct identities is one statement that needs no
    transaction around it (`Dialect.enqueue_alone`): one round trip instead of three."""
    first_schema_version: int = 1
    """The oldest table layout (`storage.schema.SCHEMA_VERSION`) this engine ever had: tables
    of older versions, to migrate, exist only on engines supported back then."""


class Dialect(Protocol):
    name: str
    """The SQLAlchemy backend name this module serves (`postgresql`, `sqlite`)."""

    url_schemes: dict[str, str]
    """URL schemes users write -> the scheme tablequeue connects with, driver included."""

    url_hint: str
    """How a URL of this engine begins, in error messages (`sqlite:///`)."""

    capabilities: Capabilities

    json_type: sa.types.TypeEngine[Any]
    """Column type of `message`, `previous_message`, `headers`, `result`, `progress`."""

    @property
    def json_indexes(self) -> JsonIndexes:
        """How this engine indexes JSON body paths (`spec.indexes`)."""

    # --- connecting and tables --------------------------------------------------------------

    def check_url(self, url: sa.URL) -> None:
        """Raise InvalidInput for a URL of this engine that tablequeue cannot use."""

    def for_url(self, url: sa.URL) -> tuple[Dialect, sa.URL]:
        """The dialect set up for a URL's tablequeue parameters (PostgreSQL's `?pooler=`),
        and the URL without them, as the driver gets it; InvalidInput for a bad one."""

    def transaction_setup(self, statement_seconds: float | None) -> Callable[[Any], None] | None:
        """What to run on the driver connection at the start of each transaction, for
        settings a connection cannot keep (behind a transaction pooler); None: nothing."""

    def id_column(self) -> sa.Column[int]:
        """The `id` primary key: a 64-bit number the database assigns, never reused."""

    def table_options(self) -> dict[str, Any]:
        """Engine-specific keyword arguments of a queue table (`sa.Table(..., **options)`)."""

    def partial_index_options(self, where: sa.ColumnElement[bool]) -> dict[str, Any]:
        """Keyword arguments that make an index partial (`sa.Index(..., **options)`)."""

    def lease_index(self, table: sa.Table, name: str) -> sa.Index:
        """The index the lease statement reads due messages in lease order from."""

    def configure_engine(self, engine: Engine) -> None:
        """Install per-connection settings (pragmas, transaction mode)."""

    def connect_args(
        self, url: sa.URL, connect_seconds: float | None, statement_seconds: float | None
    ) -> dict[str, Any]:
        """The driver's connect arguments that bound connecting and each statement (None: no
        bound); a parameter the URL sets itself wins."""

    def statement_cancelled(self, error: BaseException) -> bool:
        """Whether a driver error says the server cancelled a statement past its time bound."""

    def tune_table(self, connection: Connection, table: sa.Table) -> None:
        """Storage settings of a queue table, applied at every `apply` (idempotent)."""

    def lock_for_ddl(self, connection: Connection, key: str) -> None:
        """Serialize schema changes for `key` across processes, for this transaction."""

    def identity(self, connection: Connection) -> tuple[Any, ...]:
        """What identifies the database a connection works in (server, database, schema):
        equal for two connections exactly when they reach the same queue tables."""

    def autocommits(self, dbapi_connection: Any) -> bool:
        """True when a statement on this driver connection (the caller's) would commit on its
        own: autocommit on and no transaction open."""

    # --- SQL parts of predicates and admin statements ---------------------------------------

    def now(self) -> sa.ColumnElement[datetime]:
        """The database's current time, in the same representation the timestamp columns use."""

    def seconds_from_now(self, seconds: sa.ColumnElement[Any]) -> sa.ColumnElement[datetime]:
        """now() plus a (bound, possibly negative or fractional) number of seconds."""

    def json_scalar(
        self, column: sa.ColumnElement[Any], path: JsonPath, kind: JsonKind
    ) -> sa.ColumnElement[Any]:
        """The JSON value at `path` as an SQL value when it is of `kind`, else SQL NULL.

        Path segments are bound as parameters, never formatted into the SQL text.
        """

    def json_is_null(self, column: sa.ColumnElement[Any], path: JsonPath) -> sa.ColumnElement[bool]:
        """True when the value at `path` is missing or JSON null."""

    def is_true(self, condition: sa.ColumnElement[bool]) -> sa.ColumnElement[bool]:
        """A condition that is never NULL: true exactly where `condition` is true."""

    # --- whole operations of the hot paths --------------------------------------------------

    def queries(self, table: sa.Table, registry: sa.Table, rate_limits: sa.Table) -> Queries:
        """The statements of one queue table (made once per table and kept)."""

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
        """Lease up to `batch_size` due messages; every column of each leased row. None while
        `queue` is paused or, unless the caller took tokens for them (`limited`), rate-limited
        (`Queries.flow_gate`)."""

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
        """Insert (or upsert by messageId) messages with distinct identities, waking listeners;
        (id, message_id, tracking_id, version, status) of each row written."""

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
        """`enqueue_round` as one statement of its own on a DB-API connection in autocommit
        mode (engines with `capabilities.enqueues_alone`): the statement compiled once, run on
        the driver directly; rows with the same attributes as `enqueue_round`'s."""

    def finish(
        self,
        connection: Connection,
        queries: Queries,
        *,
        outcome: FinishOutcome | Literal["delete"],
        owner: str,
        rows: Sequence[dict[str, Any]],
    ) -> int:
        """Record completions still held at the version leased; the number recorded."""

    def fail(
        self,
        connection: Connection,
        queries: Queries,
        *,
        owner: str,
        rows: Sequence[dict[str, Any]],
    ) -> int:
        """Record failures still held at the version leased; the number recorded."""

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
        """Requeue messages held at an older version than stored; the number requeued."""

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

    def held(
        self, connection: Connection, queries: Queries, *, owner: str, ids: Sequence[int]
    ) -> set[int]:
        """Which of `ids` `owner` still holds."""

    def release(
        self, connection: Connection, queries: Queries, *, owner: str, ids: Sequence[int]
    ) -> int:
        """Give back unstarted leases and wake listeners; the number released."""

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

    def upsert(
        self, table: sa.Table, key: Sequence[str], values: dict[str, Any], update: Sequence[str]
    ) -> sa.Executable:
        """Insert one row of `values` (bound values or SQL expressions), or, when a row with the
        same `key` columns exists, set its `update` columns to the new values: one statement
        (worker heartbeats)."""

    def update_one(
        self,
        connection: Connection,
        table: sa.Table,
        where: sa.ColumnElement[bool],
        values: dict[str, Any],
    ) -> sa.Row[Any] | None:
        """Update the one row `where` chooses (by id or tracking id); the row as updated, or
        None when no row matched."""

    def upsert_on_key(self, insert: Insert, key: str, columns: Sequence[str]) -> Insert | None:
        """Turn the insert into an upsert on the primary key `key` that replaces `columns`
        with the new row's, or None when the engine has none (then delete first)."""

    def excluded(self, insert: Insert) -> Any:
        """The pseudo-table of the row that failed to insert (`EXCLUDED`)."""

    def insert(self, table: sa.Table) -> Insert:
        """An INSERT that supports `upsert_on_key`."""

    def delete_some(self, table: sa.Table, where: sa.ColumnElement[bool], limit: int) -> sa.Delete:
        """A DELETE of at most `limit` rows matching `where` (bounded purges)."""

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
        """Insert `row`, or update the row with its primary key: the `add` columns add the new
        value to the stored one, `largest` keep the larger, `smallest` the smaller, `latest`
        take the new value unless it is NULL (counters written by many processes at once, as
        by the chart rollup)."""

    def backlog(self, connection: Connection, queries: Queries) -> tuple[int, Any, Any]:
        """Due messages: their number, the oldest due time, the database's clock (raw)."""

    def count_by_status(
        self, connection: Connection, queries: Queries, exact: Sequence[str]
    ) -> tuple[dict[str, int], set[str]]:
        """Messages per status, and the statuses whose count is an estimate (never `exact`)."""

    def vacuum_if_bloated(self, engine: Engine, table: sa.Table) -> bool:
        """Reclaim finished messages' space now if enough of the table is dead and no other
        process is doing it; True when it vacuumed."""

    # --- waking workers ---------------------------------------------------------------------

    def notify(self, connection: Connection, table_name: str) -> None:
        """Wake workers listening on this queue when the transaction commits (if supported)."""

    async def listen(self, url: sa.URL, table_name: str, wake: asyncio.Event) -> None:
        """Set `wake` whenever messages of the table become available; reconnect when the
        connection is lost. Runs until cancelled. Only when `capabilities.notifies`."""


def notify_channel(table_name: str) -> str:
    """The LISTEN/NOTIFY channel of a queue table (a validated table name plus a prefix)."""
    channel = f"tq_{table_name}"
    if len(channel) <= 63:  # PostgreSQL's identifier limit
        return channel
    return f"tq_{table_name[:51]}_{zlib.crc32(table_name.encode()):08x}"
