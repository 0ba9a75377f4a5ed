"""PostgreSQL through psycopg 3: jsonb, FOR UPDATE SKIP LOCKED, ON CONFLICT, advisory locks,
per-row parameters as one JSON document (the enqueue: one binary array per column),
LISTEN/NOTIFY."""

import asyncio
import json
import logging
import math
import uuid
import zlib
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.selectable import Select

from ...errors import InvalidInput
from ..dialect import Dialect
from ..driver import DriverStatement, driver_connection
from ..on_conflict import OnConflictDialect
from ..queries import Queries
from ..types import (
    Capabilities,
    EnqueueBatch,
    JsonKind,
    JsonPath,
    Rows,
    TenantUrlRules,
    notify_channel,
)
from . import arrays
from .json_index import PostgresIndexes

_CASTS: dict[JsonKind, sa.types.TypeEngine[Any]] = {
    "string": sa.Text(),
    "number": sa.Numeric(),
    "boolean": sa.Boolean(),
}


def _path(path: JsonPath) -> sa.ColumnElement[Any]:
    """`strict $."Product"."Sku"[0]`, bound as one parameter: keys step only into objects and
    indexes only into arrays, as in SQLite's JSON paths."""
    steps = "".join(
        f"[{segment}]" if isinstance(segment, int) else "." + json.dumps(segment)
        for segment in path
    )
    return sa.cast(sa.bindparam(None, "strict $" + steps, type_=sa.Text), pg.JSONPATH)


def _extract(column: sa.ColumnElement[Any], path: JsonPath) -> sa.ColumnElement[Any]:
    # silent => a missing key or a wrong container type is SQL NULL instead of an error
    empty_vars = sa.cast(sa.literal_column("'{}'"), pg.JSONB)
    return sa.func.jsonb_path_query_first(
        column, _path(path), empty_vars, sa.true(), type_=pg.JSONB
    )


AUTOVACUUM = {
    "autovacuum_vacuum_scale_factor": "0.01",
    "autovacuum_vacuum_threshold": "1000",
    "autovacuum_vacuum_insert_scale_factor": "0.01",  # PostgreSQL 13 and later
    "autovacuum_vacuum_insert_threshold": "1000",  # PostgreSQL 13 and later
    "autovacuum_analyze_scale_factor": "0.02",
    "autovacuum_analyze_threshold": "1000",
    "autovacuum_vacuum_cost_delay": "0",
}


PER_ROW_PARAMETER = "b_rows"
VACUUM_DEAD_ROWS = 10_000


def _json_default(value: Any) -> str:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: tablequeue needs timezone-aware times")
        return value.isoformat()  # timestamptz keeps the instant
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not a per-row parameter type")


TCP_BOUNDS = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
    "tcp_user_timeout": 60_000,
}
"""A peer silent for about a minute (unacknowledged data, or no keepalive answers) is gone."""


QUERY_CANCELED = "57014"
"""The SQLSTATE of a statement the server cancelled (`statement_timeout`)."""
DEADLOCK_DETECTED = "40P01"
"""The SQLSTATE of a transaction rolled back as a deadlock's victim."""

TENANT_PARAMETERS = frozenset(
    {
        "application_name",
        "channel_binding",
        "connect_timeout",
        "load_balance_hosts",
        "password",
        "pooler",
        "require_auth",
        "sslmode",
        "target_session_attrs",
        "user",
    }
)
"""libpq's parameters a tenant's URL may set: none reads the client's files or loosens its
bounds."""
POOLERS = ("transaction",)
"""Values of the URL parameter `?pooler=`: the pooling mode of a pooler between tablequeue
and PostgreSQL (PgBouncer's `pool_mode = transaction`), under which a server connection
belongs to a client for one transaction only. See the PgBouncer guide (docs/guides/pgbouncer.md)."""

log = logging.getLogger("tablequeue.dialects")


def _on_driver(queries: Queries, statement: sa.Executable) -> DriverStatement:
    """A statement of the worker's cycle compiled for psycopg, once per queue table."""
    assert isinstance(statement, sa.ClauseElement)
    clause: sa.ClauseElement = statement
    return queries.once(("driver", id(statement)), lambda: DriverStatement(clause))


class EnqueuedRow(NamedTuple):
    """What an enqueue statement returns first (`enqueue_statement`'s RETURNING)."""

    id: int
    message_id: str | None
    tracking_id: uuid.UUID
    version: int
    status: str


class PostgresDialect(OnConflictDialect):
    name = "postgresql"
    url_schemes = {
        "postgresql": "postgresql+psycopg",
        "postgres": "postgresql+psycopg",
        "postgresql+psycopg": "postgresql+psycopg",
    }
    url_hint = "postgresql://"
    capabilities = Capabilities(
        notifies=True,
        estimates_counts=True,
        vacuums=True,
        folds_writes=True,
        enqueues_in_autocommit=True,
        stores_json_text=False,
    )
    json_type: sa.types.TypeEngine[Any] = pg.JSONB()
    json_index_strategy = PostgresIndexes

    def __init__(self, pooler: str | None = None) -> None:
        self.pooler = pooler
        """`transaction` behind a transaction pooler: no session state (startup options,
        prepared statements, LISTEN, session locks), settings per transaction."""
        self._said: set[str] = set()

    def for_url(self, url: sa.URL) -> tuple[Dialect, sa.URL]:
        """Differs because only PostgreSQL is reached through a transaction pooler (PgBouncer
        pools PostgreSQL connections only): `?pooler=transaction` (validated, then removed:
        libpq does not know it) gives a dialect for a transaction pooler."""
        self.check_url(url)
        if "pooler" not in url.query:
            return self, url
        value = url.query["pooler"]
        if value not in POOLERS:
            shown = value if isinstance(value, str) else "&pooler=".join(value)
            raise InvalidInput(
                f"unsupported pooler={shown!r} in the database URL: use pooler=transaction "
                "(PgBouncer's pool_mode = transaction) or leave it out (a direct connection, "
                "or a pooler in session mode)"
            )
        assert isinstance(value, str)
        return type(self)(pooler=value), url.difference_update_query(["pooler"])

    def tenant_url_rules(self, url: sa.URL) -> TenantUrlRules:
        """Differs because libpq reads the client's files for many parameters (`sslkey`,
        `sslcert`, `sslrootcert`, `sslcrl`, `passfile`, `service`, `host=/socket/path`) and
        `options`, `keepalives*` and `tcp_user_timeout` would undo the client's own bounds:
        these alone pass."""
        return TenantUrlRules(parameters=TENANT_PARAMETERS, connect_timeout="connect_timeout")

    def _say_once(self, what: str) -> None:
        if what not in self._said:
            self._said.add(what)
            log.info(what, extra={"pooler": self.pooler})

    def connect_args(
        self, url: sa.URL, connect_seconds: float | None, statement_seconds: float | None
    ) -> dict[str, Any]:
        """libpq's `connect_timeout` (whole seconds, at least 2 as libpq requires), the
        server-side `statement_timeout` as a startup option, and TCP keepalives with
        `tcp_user_timeout`, so that a connection whose network went silent fails instead of
        waiting for an answer for ever (the server cannot time out what it never received).

        The session's time zone is UTC, also a startup option: psycopg then returns times in
        UTC as they are, and the statements it runs itself (`driver.DriverStatement`) skip
        converting them.

        Behind a transaction pooler: no startup option (PgBouncer refuses `options`; the
        timeout is set per transaction, `transaction_setup`, and times are converted) and no
        prepared statements (psycopg's names would reach other clients' server connections)."""
        args: dict[str, Any] = {}
        if self.pooler is not None:
            args["prepare_threshold"] = None
        if connect_seconds and "connect_timeout" not in url.query:
            args["connect_timeout"] = max(2, math.ceil(connect_seconds))
        for key, value in TCP_BOUNDS.items():
            if key not in url.query:
                args[key] = value
        if self.pooler is None and "options" not in url.query:
            options = ["-c TimeZone=UTC"]
            if statement_seconds:
                options.append(f"-c statement_timeout={math.ceil(statement_seconds * 1000)}")
            args["options"] = " ".join(options)
        return args

    def transaction_setup(self, statement_seconds: float | None) -> Callable[[Any], None] | None:
        """Differs because a transaction pooler lends a server connection for one transaction
        only, so the timeout cannot be a session setting or a startup option (`connect_args`
        leaves it out there): behind one, `SET LOCAL statement_timeout` (which ends with the
        transaction) at the start of each transaction (one more round trip per transaction;
        bench/SCALING.md section 2)."""
        if self.pooler is None or not statement_seconds:
            return None
        statement = f"SET LOCAL statement_timeout = {math.ceil(statement_seconds * 1000)}"

        def setup(dbapi_connection: Any) -> None:
            if not dbapi_connection.autocommit:  # autocommit: no transaction to set it for
                dbapi_connection.execute(statement)

        return setup

    def statement_cancelled(self, error: BaseException) -> bool:
        """Differs because PostgreSQL cancels a statement past `statement_timeout` with SQLSTATE
        57014 (query_canceled), which psycopg's errors carry as `sqlstate`."""
        return getattr(error, "sqlstate", None) == QUERY_CANCELED

    def deadlocked(self, error: BaseException) -> bool:
        """Differs because PostgreSQL names a deadlock's victim by its SQLSTATE."""
        return getattr(error, "sqlstate", None) == DEADLOCK_DETECTED

    def now(self) -> sa.ColumnElement[datetime]:
        return sa.func.now(type_=sa.DateTime(timezone=True))

    def seconds_from_now(self, seconds: sa.ColumnElement[Any]) -> sa.ColumnElement[datetime]:
        interval = sa.cast(seconds, sa.Float) * sa.literal_column("interval '1 second'")
        return sa.type_coerce(self.now() + interval, sa.DateTime(timezone=True))

    def json_scalar(
        self, column: sa.ColumnElement[Any], path: JsonPath, kind: JsonKind
    ) -> sa.ColumnElement[Any]:
        value = _extract(column, path)
        text = value.op("#>>")(sa.cast(sa.literal_column("'{}'"), pg.ARRAY(sa.Text)))
        scalar: sa.ColumnElement[Any] = sa.cast(text, _CASTS[kind])
        if kind == "string":
            scalar = scalar.collate("C")  # code point order, as SQLite compares
        return sa.case((sa.func.jsonb_typeof(value) == kind, scalar), else_=sa.null())

    def json_is_null(self, column: sa.ColumnElement[Any], path: JsonPath) -> sa.ColumnElement[bool]:
        return sa.func.coalesce(sa.func.jsonb_typeof(_extract(column, path)), "null") == "null"

    def insert(self, table: sa.Table) -> Insert:
        return pg.insert(table)

    def per_row(self, columns: Sequence[sa.ColumnClause[Any]]) -> sa.TableValuedAlias:
        """Differs because PostgreSQL reads every message's row from one JSON parameter
        (`json_to_recordset`): one fixed statement text (prepared once by the driver), one
        round trip and one plan per batch whatever its size, instead of the statement run once
        per message."""
        rows = sa.cast(sa.bindparam(PER_ROW_PARAMETER, type_=sa.Text), pg.JSON)
        return sa.func.json_to_recordset(rows).table_valued(*columns).render_derived("b", True)

    def among_per_row_ids(
        self, id_column: sa.ColumnElement[int], id_name: str
    ) -> sa.ColumnElement[bool]:
        """Differs because PostgreSQL's planner, left to join the per-row source (estimated
        at 100 rows) to the queue table, scans the whole table below ~15,000 rows, or finds
        the rows through another index when its statistics see few of them (the status index,
        with an entry for every row leased since the last vacuum): `id = ANY(ARRAY(SELECT ...
        FROM json_to_recordset(...)))` makes the primary key the way in, whatever the table's
        size, its statistics or the plan mode (bench/results/settle-plans-2026-11-29.md)."""
        rows = sa.cast(sa.bindparam(PER_ROW_PARAMETER, type_=sa.Text), pg.JSON)
        ids = (
            sa.func.json_to_recordset(rows)
            .table_valued(sa.column(id_name, sa.BigInteger()))
            .render_derived("b_ids", True)
        )
        return id_column == sa.any_(sa.func.array(sa.select(ids.c[id_name]).scalar_subquery()))

    def per_row_parameters(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Differs because `per_row` reads one JSON text: the rows as one compact JSON array
        (times in ISO 8601 with their offset, so that timestamptz keeps the instant; UUIDs as
        text)."""
        text = json.dumps(rows, default=_json_default, separators=(",", ":"), allow_nan=False)
        return {PER_ROW_PARAMETER: text}

    def per_row_arrays(self, columns: Sequence[sa.ColumnClause[Any]]) -> sa.TableValuedAlias:
        """Differs because the enqueue, which this dialect runs on the driver itself, can send
        one binary array per column that `unnest` reads without parsing a JSON document row by
        row (`arrays.py`: about 4 µs of the server's CPU per message less)."""
        return arrays.unnest(columns)

    def hot_rows(
        self,
        connection: Connection,
        queries: Queries,
        statement: sa.Executable,
        parameters: dict[str, Any],
    ) -> Sequence[Sequence[Any]]:
        """Differs because SQLAlchemy's execution context and result rows cost more client CPU
        than the lease itself (its `UtcDateTime` alone is a Python call per time, seven a row):
        the statement runs on psycopg directly (`driver.DriverStatement`, compiled once per
        table, prepared on first use), in SQLAlchemy's transaction, with its errors."""
        run = _on_driver(queries, statement)
        with driver_connection(connection) as dbapi_connection:
            return run.run(dbapi_connection, parameters)

    def hot_count(
        self,
        connection: Connection,
        queries: Queries,
        statement: sa.Executable,
        parameters: dict[str, Any] | list[dict[str, Any]],
    ) -> int:
        """Differs as `hot_rows` does; every outcome is one statement with the batch's rows
        in one JSON document (`per_row`), so `parameters` is one dict."""
        assert isinstance(parameters, dict)
        run = _on_driver(queries, statement)
        with driver_connection(connection) as dbapi_connection:
            return run.count(dbapi_connection, parameters)

    def enqueue_round(self, connection: Connection, queries: Queries, batch: EnqueueBatch) -> Rows:
        """Differs because one binary array per column (`arrays`) costs PostgreSQL less than
        a JSON document per batch: the statement runs on the driver through SQLAlchemy's
        connection, in its transaction, with its errors."""
        sql, parameters = self._enqueue_statement(queries, batch)
        return connection.exec_driver_sql(sql, parameters).all()

    def enqueue_autocommit(
        self, dbapi_connection: Any, queries: Queries, batch: EnqueueBatch
    ) -> Rows:
        """Differs because on PostgreSQL the enqueue is one statement that needs no transaction
        around it (it reads the default status and notifies itself): in autocommit it is one
        round trip instead of three (BEGIN, INSERT, COMMIT), run on psycopg directly. One
        message takes the golden `insert_one`/`upsert_one*` (scalar parameters) through
        `driver.DriverStatement` (compiled once per table, prepared on first use, rows as
        tuples); several take the golden `insert_new`/`upsert_*` with binary placeholders for
        the arrays, compiled once per table (psycopg prepares it after a few executions)."""
        upsert, idempotent, dedupe = batch.upsert, batch.idempotent, batch.dedupe
        if len(batch.rows) == 1:
            one = queries.once(
                ("autocommit", "one", upsert, idempotent, dedupe),
                lambda: DriverStatement(
                    queries.upsert_one(idempotent, dedupe) if upsert else queries.insert_one()
                ),
            )
            written = one.run(dbapi_connection, batch.rows[0] | batch.shared_parameters())
            return [EnqueuedRow(*row[:5]) for row in written]  # type: ignore[misc]
        sql, parameters = self._enqueue_statement(queries, batch)
        from psycopg.rows import namedtuple_row  # psycopg loads only where PostgreSQL is used

        with dbapi_connection.cursor(row_factory=namedtuple_row) as cursor:
            cursor.execute(sql, parameters)
            written_many: Rows = cursor.fetchall()
            return written_many

    def _enqueue_statement(
        self, queries: Queries, batch: EnqueueBatch
    ) -> tuple[str, dict[str, Any]]:
        """The driver's text of the enqueue statement (made once per table) and the
        parameters of one execution."""
        upsert, idempotent, dedupe = batch.upsert, batch.idempotent, batch.dedupe

        def make() -> tuple[str, dict[str, Any], frozenset[str]]:
            statement, per_row = (
                queries.upsert_by_message_id(idempotent, dedupe) if upsert else queries.insert_new()
            )
            sql, fixed = _for_driver(statement)
            names = [c.name for c in per_row.columns]
            sql = arrays.binary_placeholders(sql, names)
            fixed = {k: v for k, v in fixed.items() if k not in names}
            return sql, fixed, arrays.json_columns(per_row.columns)

        sql, fixed, json_names = queries.once(("driver", upsert, idempotent, dedupe), make)
        parameters = fixed | arrays.parameters(batch.rows, json_names, arrays.encode_json)
        parameters |= batch.shared_parameters()
        return sql, parameters

    def lock_candidates(self, select: Select[Any], lease_index: str) -> Select[Any]:
        return select.with_for_update(skip_locked=True)

    def tune_table(self, connection: Connection, table: sa.Table) -> None:
        """Every message is an insert, an update and a delete: vacuum the table after 1% of it
        (at least 1,000 rows) is dead instead of PostgreSQL's 20%, unthrottled, so the space of
        finished messages is reused instead of growing the table and its indexes."""
        wanted = dict(AUTOVACUUM)
        if (connection.dialect.server_version_info or (0,)) < (13,):
            wanted = {k: v for k, v in wanted.items() if "_insert_" not in k}
        current = connection.execute(
            sa.text("SELECT reloptions FROM pg_class WHERE oid = CAST(:table AS regclass)"),
            {"table": connection.dialect.identifier_preparer.format_table(table)},
        ).scalar()
        if set(current or []) >= {f"{k}={v}" for k, v in wanted.items()}:
            return  # already set: no lock, no ownership needed
        quoted = connection.dialect.identifier_preparer.format_table(table)
        settings = ", ".join(f"{k} = {v}" for k, v in wanted.items())
        connection.exec_driver_sql("SET LOCAL lock_timeout = '10s'")  # behind a VACUUM: fail
        connection.exec_driver_sql(f"ALTER TABLE {quoted} SET ({settings})")

    def vacuum_if_bloated(self, engine: Engine, table: sa.Table) -> bool:
        """Autovacuum visits a database at most once per `autovacuum_naptime` (a minute by
        default): at thousands of messages a second the table fills with dead rows meanwhile.
        Workers call this every few seconds; one of them (an advisory lock) vacuums when more
        than VACUUM_DEAD_ROWS rows and a quarter as many as live ones are dead. (A user that
        does not own the table gets a warning from PostgreSQL and nothing happens.)

        Behind a transaction pooler: never (a session lock and VACUUM, which cannot run in a
        transaction, would land on different server connections); autovacuum does it with
        the table's settings from `tune_table`."""
        if self.pooler is not None:
            self._say_once("behind a transaction pooler: no vacuum checks, autovacuum does it")
            return False
        quoted = engine.dialect.identifier_preparer.format_table(table)
        lock_id = zlib.crc32(f"tablequeue:vacuum:{table.name}".encode())
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            if not connection.execute(sa.select(sa.func.pg_try_advisory_lock(lock_id))).scalar():
                return False
            try:
                dead, live = connection.execute(
                    sa.text(
                        "SELECT n_dead_tup, n_live_tup FROM pg_stat_user_tables"
                        " WHERE relid = CAST(:table AS regclass)"
                    ),
                    {"table": quoted},
                ).one()
                if dead < max(VACUUM_DEAD_ROWS, live // 4):
                    return False
                connection.exec_driver_sql("SET statement_timeout = 0")  # may take minutes
                try:
                    connection.exec_driver_sql(f"VACUUM {quoted}")
                finally:
                    connection.exec_driver_sql("RESET statement_timeout")  # the pooled default
                return True
            finally:
                connection.execute(sa.select(sa.func.pg_advisory_unlock(lock_id)))

    def lock_for_ddl(self, connection: Connection, key: str) -> None:
        """Differs because PostgreSQL does not serialize a check-then-create
        (`create(checkfirst=True)`) or a migration: two processes applying at once could both
        find a table missing and both create it, and one of them would fail. DDL is
        transactional here, so an advisory lock for the transaction (`pg_advisory_xact_lock`)
        is held until the changes commit."""
        lock_id = zlib.crc32(f"tablequeue:{key}".encode())
        connection.execute(sa.select(sa.func.pg_advisory_xact_lock(lock_id)))

    def identity(self, connection: Connection) -> tuple[Any, ...]:
        # The server by its start time and port (anyone may read both), then the database and
        # the schema unqualified names resolve to.
        return tuple(
            connection.execute(
                sa.text(
                    "SELECT pg_postmaster_start_time(), current_setting('port'),"
                    " current_database(), current_schema()"
                )
            ).one()
        )

    def autocommits(self, dbapi_connection: Any) -> bool:
        # psycopg 3: autocommit, unless inside `with conn.transaction():` (BEGIN was sent).
        status = getattr(dbapi_connection.info.transaction_status, "name", "")
        return bool(dbapi_connection.autocommit) and status == "IDLE"

    def notify(self, connection: Connection, table_name: str) -> None:
        """Differs because PostgreSQL has LISTEN/NOTIFY: `pg_notify` on the queue's channel,
        which PostgreSQL delivers to listeners when the transaction commits (never if it rolls
        back)."""
        channel = sa.bindparam("b_channel", notify_channel(table_name), type_=sa.Text)
        connection.execute(sa.select(sa.func.pg_notify(channel, sa.literal_column("''"))))

    def notify_when_returning(self, table_name: str) -> list[sa.ColumnElement[Any]]:
        """Differs because PostgreSQL can notify from within the statement: a `pg_notify`
        subquery among the RETURNING columns wakes listeners without a round trip of its own."""
        # An uncorrelated scalar subquery is an InitPlan: run once, when the first row returns.
        channel = sa.bindparam("b_channel", notify_channel(table_name), type_=sa.Text)
        notify = sa.select(sa.func.pg_notify(channel, sa.literal_column("''")))
        return [notify.scalar_subquery().label("notified")]

    async def listen(self, url: sa.URL, table_name: str, wake: asyncio.Event) -> None:
        """Differs because PostgreSQL has LISTEN/NOTIFY (`listener.py`). Behind a transaction
        pooler it only waits until cancelled: a pooled server connection never gets the NOTIFY,
        so the worker polls."""
        # Imported here: psycopg's libpq loads only for a process that listens.
        from .listener import listen

        if self.pooler is not None:  # a pooled server connection never gets the NOTIFY
            self._say_once("behind a transaction pooler: no LISTEN, the worker polls")
            await asyncio.Event().wait()  # runs until cancelled, as the listener does
        await listen(url, notify_channel(table_name), wake)

    def count_by_status(
        self, connection: Connection, queries: Queries, exact: Sequence[str]
    ) -> tuple[dict[str, int], set[str]]:
        """Exact counts, except for statuses with more than EXACT_COUNT_LIMIT rows by the
        planner's statistics (typically Processed in a queue that keeps history): those are
        estimates, so that counting stays fast at ten million rows (GROUP BY would read them
        all). The statuses present are found by a loose scan of the status index."""
        table = queries.table
        quoted = connection.dialect.identifier_preparer.format_table(table)
        present = [
            row[0]
            for row in connection.exec_driver_sql(
                f"WITH RECURSIVE s(status) AS ("  # noqa: S608 (a validated, quoted name)
                f" (SELECT status FROM {quoted} ORDER BY status LIMIT 1)"
                f" UNION ALL SELECT (SELECT status FROM {quoted} WHERE status > s.status"
                f" ORDER BY status LIMIT 1) FROM s WHERE s.status IS NOT NULL"
                f") SELECT status FROM s WHERE status IS NOT NULL"
            )
        ]
        estimates = _status_estimates(connection, table.name)
        big = {s for s in present if s not in exact and estimates.get(s, 0) > EXACT_COUNT_LIMIT}
        counts = {s: estimates[s] for s in big}
        small = [s for s in present if s not in big]
        if small:
            counted = connection.execute(queries.count_by_status(small))
            counts |= {status: int(n) for status, n in counted}
        return counts, big


EXACT_COUNT_LIMIT = 100_000
_DRIVER_DIALECT = PGDialect_psycopg()  # type: ignore[no-untyped-call]


def _for_driver(statement: sa.ClauseElement) -> tuple[str, dict[str, Any]]:
    """A statement's text for psycopg (`%(name)s` parameters) and its fixed parameters."""
    compiled = statement.compile(dialect=_DRIVER_DIALECT)
    return compiled.string, dict(compiled.params)


def _status_estimates(connection: Connection, table_name: str) -> dict[str, int]:
    """Rows per status by the last ANALYZE: row estimate times most-common-value frequency."""
    row = connection.execute(
        sa.text(
            "SELECT c.reltuples, s.most_common_vals::text::text[], s.most_common_freqs"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " LEFT JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = c.relname"
            " AND s.attname = 'status'"
            " WHERE c.relname = :table AND n.nspname = current_schema()"
        ),
        {"table": table_name},
    ).first()
    if row is None or row[1] is None or row[0] <= 0:
        return {}
    reltuples, values, frequencies = row
    return {value: round(reltuples * freq) for value, freq in zip(values, frequencies, strict=True)}


DIALECT = PostgresDialect()
