"""MariaDB (10.11; 10.6 at least) through PyMySQL, or through pyodbc and MariaDB's ODBC driver.

- The lease is a locking read (`FOR UPDATE SKIP LOCKED`) and an UPDATE by id in the same
  transaction (MariaDB has no UPDATE ... RETURNING): two round trips, see `queries.py`.
- Enqueues are INSERT ... SELECT FROM JSON_TABLE(...) ON DUPLICATE KEY UPDATE ... RETURNING:
  one round trip per batch; outcomes are multi-table UPDATEs and DELETEs joined to JSON_TABLE.
- Sessions run READ COMMITTED (no gap locks: a lease never blocks enqueues), with a binary
  connection collation; queue tables use `utf8mb4_nopad_bin`, so identities and statuses
  compare exactly (case and trailing spaces count), as on PostgreSQL and SQLite.
- Timestamps are DATETIME(6) in UTC (`UTC_TIMESTAMP(6)`); JSON is MariaDB's JSON (LONGTEXT
  with a JSON_VALID check). No notifications: workers poll.

MySQL itself is not supported: it lacks INSERT ... RETURNING (SQLAlchemy's `mariadb` dialect
refuses a MySQL server with a clear error when it connects).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.selectable import Select

from ..dialect import Dialect
from ..queries import Queries
from ..types import (
    Capabilities,
    EnqueueBatch,
    JsonKind,
    JsonPath,
    LeasedRows,
    LeaseExpiredPolicy,
    LeaseRequest,
    SweptLease,
    TenantUrlRules,
    group_parameters,
)
from .compiling import (
    TypeCompiler,
    datetimes_as_text,
    json_table_type,
    per_row_first,
    per_row_value,
)
from .json_index import MariaDbIndexes
from .json_paths import arrays_on_the_way, extract, typed_value
from .queries import NOW_LABEL, MariaDbQueries

COLLATION = "utf8mb4_nopad_bin"
PER_ROW_PARAMETER = "b_rows"
_DDL_LOCK_TIMEOUT_SECONDS = 60
_ODBC_SERVER_PORT = re.compile(r"\bServer=([^;,]+),(\d+)", re.IGNORECASE)
_DEADLOCK = 1213
"""ER_LOCK_DEADLOCK: the transaction was rolled back as a deadlock's victim."""
_STATEMENT_TIMEOUT = 1969
"""ER_STATEMENT_TIMEOUT: `max_statement_time` exceeded (MariaDB)."""
_READ_BOUND = "tablequeue_read_bound"
"""A connect argument of ours, taken out before PyMySQL sees it: the read timeout a
connection keeps once connected (PyMySQL's `read_timeout` also bounds the server's greeting,
which `connect_timeout` does not)."""


def _error_code(error: BaseException) -> Any:
    """MariaDB's error number as PyMySQL gives it (its first argument); pyodbc's SQLSTATE."""
    return error.args[0] if error.args else None


_SERVER_STATUS_IN_TRANS = 1
"""The server status flag of an open transaction (MariaDB's protocol)."""


class MariaDbDialect(Dialect):
    name = "mariadb"
    url_schemes = {
        "mariadb": "mariadb+pymysql",
        "mariadb+pymysql": "mariadb+pymysql",
        "mysql": "mariadb+pymysql",
        "mysql+pymysql": "mariadb+pymysql",
        "mariadb+pyodbc": "mariadb+pyodbc",
        "mysql+pyodbc": "mariadb+pyodbc",
    }
    url_hint = "mariadb://"
    capabilities = Capabilities(
        notifies=False, estimates_counts=True, vacuums=False, first_schema_version=2
    )
    json_type: sa.types.TypeEngine[Any] = mysql.JSON()
    json_index_strategy = MariaDbIndexes

    # --- connecting and tables --------------------------------------------------------------

    def table_options(self) -> dict[str, Any]:
        """Differs because MariaDB chooses a table's storage engine, character set and collation
        from server defaults: InnoDB (transactions and row locks) whatever the server's default
        engine, utf8mb4 (every Unicode character; MariaDB's `utf8` holds three bytes at most)
        and `utf8mb4_nopad_bin`, so that identities and statuses compare exactly, case and
        trailing spaces included, as on PostgreSQL and SQLite (the default utf8mb4 collation
        ignores case)."""
        return {
            "mariadb_engine": "InnoDB",
            "mariadb_charset": "utf8mb4",
            "mariadb_collate": COLLATION,
        }

    def partial_index_options(self, where: sa.ColumnElement[bool]) -> dict[str, Any]:
        """Differs because MariaDB has no partial indexes: none (a UNIQUE index admits any
        number of NULLs anyway; the lease index is led by status instead, `lease_index`)."""
        return {}

    def lease_index(self, table: sa.Table, name: str) -> sa.Index:
        """Differs because MariaDB has no partial indexes: led by status, so that each leasable
        status is read in lease order (queries.py)."""
        c = table.c
        return sa.Index(name, c.status, c.priority.desc(), c.process_after, c.id)

    def connect_args(
        self, url: sa.URL, connect_seconds: float | None, statement_seconds: float | None
    ) -> dict[str, Any]:
        """Differs because MariaDB bounds statements by a session variable, set by each
        driver's own init statement: the drivers' connect timeout, and MariaDB's
        `max_statement_time` for the session (PyMySQL's `init_command`; MariaDB's ODBC
        driver's `InitStmt`, which pyodbc adds to the connection string); and the connection's
        character set is utf8mb4 whatever the server's default, so that text (JSON as written
        included) travels whole, emoji too (MariaDB's `utf8` holds three bytes at most)."""
        odbc = url.get_driver_name() == "pyodbc"
        args: dict[str, Any] = {}
        charset_key = "CHARSET" if odbc else "charset"
        if charset_key not in url.query:
            args[charset_key] = "utf8mb4"
        timeout_key = "timeout" if odbc else "connect_timeout"
        if connect_seconds and timeout_key not in url.query:
            args[timeout_key] = max(1, math.ceil(connect_seconds))
        init_key = "InitStmt" if odbc else "init_command"
        if statement_seconds and init_key not in url.query:
            args[init_key] = f"SET SESSION max_statement_time = {statement_seconds:g}"
        if not odbc and connect_seconds and "read_timeout" not in url.query:
            # A silent server fails the greeting within the connect bound; once connected, a
            # read waits for the server's own statement bound plus the connect bound.
            args["read_timeout"] = max(1, math.ceil(connect_seconds))
            args[_READ_BOUND] = (
                math.ceil(statement_seconds + connect_seconds) if statement_seconds else None
            )
        return args

    def tenant_url_rules(self, url: sa.URL) -> TenantUrlRules:
        """Differs because PyMySQL takes every URL parameter as a connect argument, and some act
        on the client: `local_infile` sends any file the server asks for, `read_default_file`
        reads an option file, `ssl_key` and its kin read files, `init_command` and the read
        and write timeouts undo its bounds. Through ODBC, a DRIVER path loads a library."""
        if url.get_driver_name() == "pyodbc":
            return TenantUrlRules(
                parameters=frozenset({"driver", "timeout", "charset"}),
                connect_timeout="timeout",
                odbc=True,
            )
        return TenantUrlRules(
            parameters=frozenset({"charset", "connect_timeout", "ssl_check_hostname"}),
            connect_timeout="connect_timeout",
        )

    def statement_cancelled(self, error: BaseException) -> bool:
        """Differs because MariaDB aborts a statement past `max_statement_time` with error 1969
        (ER_STATEMENT_TIMEOUT, "... max_statement_time exceeded"): PyMySQL gives the code as
        the error's first argument, pyodbc the SQLSTATE, so the message is read too."""
        cancelled = _error_code(error) == _STATEMENT_TIMEOUT
        return cancelled or "max_statement_time exceeded" in str(error)

    def deadlocked(self, error: BaseException) -> bool:
        """Differs because InnoDB chooses deadlock victims among concurrent leases and outcomes
        (their index locks on the lease index): error 1213, ER_LOCK_DEADLOCK (PyMySQL gives the
        code, pyodbc SQLSTATE 40001 and the message)."""
        return _error_code(error) == _DEADLOCK or "Deadlock found" in str(error)

    def configure_engine(self, engine: Engine) -> None:
        """Differs because MariaDB and its drivers need settings SQLAlchemy does not make:
        DATETIME(6) (a plain DATETIME keeps no fraction of a second); outcomes read their
        per-row source first (`per_row_first`: else concurrent outcomes deadlock); through
        PyMySQL the read bound once connected (`connect_args`); through MariaDB's ODBC driver a
        Port key, and datetimes and UUIDs bound as text; every session READ COMMITTED (InnoDB's
        default REPEATABLE READ takes gap locks: a lease would block enqueues) in the tables'
        binary collation."""
        engine.dialect.type_compiler_instance = TypeCompiler(engine.dialect)
        engine.dialect.statement_compiler = per_row_first(engine.dialect.statement_compiler)
        if engine.dialect.driver == "pymysql":

            @event.listens_for(engine, "do_connect")
            def _read_bound(dialect: Any, _record: Any, cargs: list[Any], cparams: Any) -> Any:
                if _READ_BOUND not in cparams:
                    return None  # SQLAlchemy connects as usual
                bound = cparams.pop(_READ_BOUND)
                connection = dialect.loaded_dbapi.connect(*cargs, **cparams)
                connection._read_timeout = bound  # PyMySQL reads it before every read
                return connection

        if engine.dialect.driver == "pyodbc":

            @event.listens_for(engine, "do_connect")
            def _odbc_port(_dialect: Any, _record: Any, cargs: list[Any], _params: Any) -> None:
                # SQLAlchemy writes SQL Server's `Server=host,port`; MariaDB's driver wants Port.
                if cargs and isinstance(cargs[0], str):
                    cargs[0] = _ODBC_SERVER_PORT.sub(r"Server=\1;Port=\2", cargs[0])

            @event.listens_for(engine, "before_cursor_execute", retval=True)
            def _odbc_microseconds(
                _conn: Any, _cursor: Any, statement: str, parameters: Any, _ctx: Any, many: bool
            ) -> tuple[str, Any]:
                # MariaDB's ODBC driver drops the fraction of a bound datetime: bind text.
                if many:
                    return statement, [datetimes_as_text(row) for row in parameters]
                return statement, datetimes_as_text(parameters)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
            cursor.execute(f"SET SESSION collation_connection = '{COLLATION}'")
            cursor.close()
            if engine.dialect.driver == "pyodbc":
                # pyodbc sends a uuid.UUID as a 16-byte GUID, which never equals a stored UUID:
                # bind text, as SQLAlchemy does for the MariaDB drivers it knows to need it.
                engine.dialect._allows_uuid_binds = False  # type: ignore[attr-defined]

    def lock_for_ddl(self, connection: Connection, key: str) -> None:
        """Differs because two processes applying at once could both find a table missing or
        not migrated and both change it: a named lock held until the transaction ends
        (MariaDB's DDL commits implicitly, so it cannot be a row lock)."""
        name = f"tablequeue:{key}"
        got = connection.execute(
            sa.select(sa.func.get_lock(name, _DDL_LOCK_TIMEOUT_SECONDS))
        ).scalar()
        if got != 1:
            raise TimeoutError(f"waited {_DDL_LOCK_TIMEOUT_SECONDS}s for the lock {name!r}")

        def release(conn: Connection) -> None:
            conn.execute(sa.select(sa.func.release_lock(name)))

        event.listen(connection, "commit", release, once=True)
        event.listen(connection, "rollback", release, once=True)

    def identity(self, connection: Connection) -> tuple[Any, ...]:
        return tuple(
            connection.execute(sa.text("SELECT @@hostname, @@port, @@datadir, DATABASE()")).one()
        )

    def autocommits(self, dbapi_connection: Any) -> bool:
        if hasattr(dbapi_connection, "get_autocommit"):  # PyMySQL: the server's status flags
            in_transaction = dbapi_connection.server_status & _SERVER_STATUS_IN_TRANS
            return bool(dbapi_connection.get_autocommit()) and not in_transaction
        return bool(dbapi_connection.autocommit)  # pyodbc

    # --- SQL parts --------------------------------------------------------------------------

    def now(self) -> sa.ColumnElement[datetime]:
        return sa.func.utc_timestamp(sa.literal_column("6"), type_=sa.DateTime())

    def seconds_from_now(self, seconds: sa.ColumnElement[Any]) -> sa.ColumnElement[datetime]:
        # INTERVAL n SECOND would round a fraction to whole seconds: add microseconds instead.
        micros = sa.cast(sa.func.round(seconds * sa.literal_column("1000000")), sa.BigInteger)
        return sa.func.timestampadd(
            sa.literal_column("MICROSECOND"), micros, self.now(), type_=sa.DateTime()
        )

    def json_scalar(
        self, column: sa.ColumnElement[Any], path: JsonPath, kind: JsonKind
    ) -> sa.ColumnElement[Any]:
        return typed_value(column, path, kind)

    def json_is_null(self, column: sa.ColumnElement[Any], path: JsonPath) -> sa.ColumnElement[bool]:
        value_type = sa.func.coalesce(sa.func.json_type(extract(column, path)), "NULL")
        arrays = arrays_on_the_way(column, path)
        if not arrays:
            return value_type == "NULL"
        return sa.or_(value_type == "NULL", sa.not_(sa.and_(*arrays)))

    def insert(self, table: sa.Table) -> Insert:
        return mysql.insert(table)

    def upsert(
        self, table: sa.Table, key: Sequence[str], values: dict[str, Any], update: Sequence[str]
    ) -> sa.Executable:
        insert = mysql.insert(table).values(**values)  # the key is the primary or a unique key
        return insert.on_duplicate_key_update({c: insert.inserted[c] for c in update})

    def excluded(self, insert: Insert) -> Any:
        assert isinstance(insert, mysql.Insert)
        return insert.inserted

    def on_conflict_message_id(
        self, insert: Insert, set_: dict[str, Any], where: sa.ColumnElement[bool] | None
    ) -> Insert:
        """ON DUPLICATE KEY UPDATE has no WHERE: with one, every assignment keeps the old value
        unless `where` holds. Assignments see the columns assigned before them, and `where`
        reads columns that are assigned (`message`, `created_at`): `updated_at` is assigned
        first, to the statement's clock where `where` holds, and the others follow it (a row
        whose `updated_at` is now the statement's clock was written by it)."""
        assert isinstance(insert, mysql.Insert)
        table = insert.table
        assert isinstance(table, sa.Table)
        if where is None:
            return insert.on_duplicate_key_update(list(set_.items()))
        now = set_["updated_at"]
        written = table.c.updated_at == now
        ordered = [("updated_at", sa.case((where, now), else_=table.c.updated_at))]
        others = [(k, v) for k, v in set_.items() if k != "updated_at"]
        ordered += [(k, sa.case((written, v), else_=table.c[k])) for k, v in others]
        return insert.on_duplicate_key_update(ordered)

    def keep_message_id(self, insert: Insert) -> Insert:
        """ON DUPLICATE KEY UPDATE with an assignment that changes nothing: MariaDB has no DO
        NOTHING (INSERT IGNORE would turn every other error into a warning too)."""
        assert isinstance(insert, mysql.Insert)
        return insert.on_duplicate_key_update(id=insert.table.c.id)

    def upsert_on_key(self, insert: Insert, key: str, columns: Sequence[str]) -> Insert | None:
        """Differs because MariaDB has INSERT ... ON DUPLICATE KEY UPDATE (`on_conflict_key`):
        the upsert is one statement, with no delete first."""
        return self.on_conflict_key(insert, {c: self.excluded(insert)[c] for c in columns})

    def on_conflict_key(self, insert: Insert, set_: dict[str, Any]) -> Insert:
        """Differs because MariaDB has no ON CONFLICT (the shared `on_conflict_do_update`): ON
        DUPLICATE KEY UPDATE, which names no key and updates the row whose primary or unique
        key the new row collides with."""
        assert isinstance(insert, mysql.Insert)
        return insert.on_duplicate_key_update(set_)

    def lock_candidates(self, select: Select[Any], lease_index: str) -> Select[Any]:
        return select.with_for_update(skip_locked=True)  # unused: `lease` is overridden

    def per_row(self, columns: Sequence[sa.ColumnClause[Any]]) -> sa.TableValuedAlias:
        """Differs because MariaDB (10.6 and later) reads every message's row from one JSON
        parameter with JSON_TABLE: one statement and one round trip per batch, where PyMySQL's
        executemany batches only INSERT ... VALUES and runs an UPDATE once per message."""
        definitions = ", ".join(
            f"{c.name} {json_table_type(c.type)} PATH '$.{c.name}'" for c in columns
        )
        rows = sa.bindparam(PER_ROW_PARAMETER, type_=sa.Text)
        shape: sa.ColumnElement[Any] = sa.literal_column(f"'$[*]' COLUMNS ({definitions})")
        return sa.func.json_table(rows, shape).table_valued(*columns).alias("b")

    def per_row_parameters(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        # Differs because `per_row` reads one JSON text (JSON_TABLE). None is left out: a
        # missing path is SQL NULL, where a JSON column reads `null` as JSON null. The bodies'
        # text is as canonical_json writes it (sorted keys, non-ASCII as is): JSON_TABLE keeps it.
        present = [{k: v for k, v in row.items() if v is not None} for row in rows]
        text = json.dumps(
            present,
            default=per_row_value,
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
        return {PER_ROW_PARAMETER: text}

    # --- whole operations -------------------------------------------------------------------

    def queries(self, table: sa.Table, registry: sa.Table, rate_limits: sa.Table) -> Queries:
        """Differs because MariaDB has no UPDATE ... RETURNING and no partial indexes:
        `MariaDbQueries` leases, extends, sweeps and expires by reads and updates by id, and
        its idempotent upsert says which rows it wrote."""
        return MariaDbQueries(self, table, registry, rate_limits)

    def lease(self, connection: Connection, queries: Queries, request: LeaseRequest) -> LeasedRows:
        """Differs because MariaDB has no UPDATE ... RETURNING: the candidates are read and
        locked (SKIP LOCKED), then marked Leased by id, and the leased rows are the read rows
        with the values the update wrote."""
        assert isinstance(queries, MariaDbQueries)
        batch_size, lease_seconds = request.batch_size, request.lease_seconds
        owner, correlation_id = request.owner, request.correlation_id
        candidates = connection.execute(
            queries.lease(request.rate_limited, request.concurrency_limited, request.group),
            {"b_n": batch_size, "b_queue": request.queue} | group_parameters(request),
        ).all()
        if not candidates:
            return []
        in_lease_order = sorted(candidates, key=lambda r: (-r.priority, r.process_after, r.id))
        chosen = in_lease_order[:batch_size]
        now = chosen[0]._mapping[NOW_LABEL].replace(tzinfo=UTC)
        expires = now + timedelta(seconds=lease_seconds)
        connection.execute(
            queries.mark_leased(),
            {
                "b_ids": [row.id for row in chosen],
                "b_expires": expires,
                "b_owner": owner,
                "b_cid": correlation_id,
                "b_now": now,
            },
        )
        leased = {
            "status": "Leased",
            "lease_expires_at": expires,
            "lease_owner": owner,
            "correlation_id": correlation_id,
            "updated_at": now,
            "started_at": now,
        }
        columns = [c.name for c in queries.table.c]
        return [
            tuple(
                leased.get(name, row.attempts + 1 if name == "attempts" else row._mapping[name])
                for name in columns
            )
            for row in chosen
        ]

    def enqueue_round(self, connection: Connection, queries: Queries, batch: EnqueueBatch) -> Any:
        """Differs because ON DUPLICATE KEY UPDATE returns every row, written or not: rows
        left as they were (an idempotent queue's unchanged messages, or kept by the dedupe
        mode) are left out, as other engines' WHERE and DO NOTHING do."""
        written = super().enqueue_round(connection, queries, batch)
        if batch.upsert and (batch.idempotent or batch.dedupe != "replace"):
            return [row for row in written if row.written]
        return written

    def sweep(
        self,
        connection: Connection,
        queries: Queries,
        *,
        on_lease_expired: LeaseExpiredPolicy,
        max_attempts: int,
    ) -> tuple[list[SweptLease], int]:
        """Differs because MariaDB has no UPDATE ... RETURNING: the lapsed leases are read and
        locked (SKIP LOCKED: one a worker is settling right now is left to it), then settled
        by id; expired messages are found by a read without locks and expired by id,
        EXPIRE_BATCH at a time (an UPDATE searching for them would lock every leasable message
        it reads, `MariaDbQueries.expiring`)."""
        assert isinstance(queries, MariaDbQueries)
        lapsed = connection.execute(queries.sweep_lapsed_leases(on_lease_expired, max_attempts))
        swept = lapsed.all()
        if swept:
            settle = queries.settle_lapsed_leases(on_lease_expired, max_attempts)
            connection.execute(settle, {"b_ids": [row.id for row in swept]})
        expired = 0
        while True:
            found = connection.execute(queries.expiring(), {"b_n": EXPIRE_BATCH}).scalars().all()
            if not found:
                break
            changed = int(connection.execute(queries.expire(), {"b_ids": found}).rowcount)
            expired += changed
            if len(found) < EXPIRE_BATCH or not changed:
                break
        return list(swept), expired

    def extend(
        self,
        connection: Connection,
        queries: Queries,
        *,
        owner: str,
        ids: Sequence[int],
        lease_seconds: float,
    ) -> set[int]:
        """Differs because MariaDB has no UPDATE ... RETURNING: the update's row count says
        whether every lease was extended; when some were lost, `held` reads which ones the
        owner still holds."""
        parameters = {"b_ids": list(ids), "b_owner": owner, "b_lease": lease_seconds}
        extended = connection.execute(queries.extend(), parameters).rowcount
        if extended == len(set(ids)):
            return set(ids)
        # Some were lost: the rows this transaction updated are exactly those still held.
        return self.held(connection, queries, owner=owner, ids=ids)

    def count_by_status(
        self, connection: Connection, queries: Queries, exact: Sequence[str]
    ) -> tuple[dict[str, int], set[str]]:
        """Differs because an exact GROUP BY reads every row of a big status: exact counts,
        except for statuses outside `exact` with more than EXACT_COUNT_LIMIT rows by the
        optimizer's estimates, typically Processed history: those share the table's row
        estimate (information_schema) left after the exact counts, in proportion to their
        index dives (EXPLAIN's rows; InnoDB caps a dive at half the table, so a dive
        near that cap only says "large")."""
        table = queries.table
        present = _statuses_present(connection, table)
        dives = {s: _dive(connection, table, s) for s in present if s not in exact}
        total = _estimated_rows(connection, table) if dives else 0
        big = {
            s
            for s, rows in dives.items()
            if rows > EXACT_COUNT_LIMIT or (total > EXACT_COUNT_LIMIT and rows * 2.2 >= total)
        }
        counts: dict[str, int] = {}
        small = [s for s in present if s not in big]
        if small:
            counted = connection.execute(queries.count_by_status(small))
            counts = {status: int(n) for status, n in counted}
        left = max(total - sum(counts.values()), 0)
        for status in big:
            counts[status] = max(round(left * dives[status] / sum(dives[s] for s in big)), 1)
        return counts, big

    def update_one(
        self,
        connection: Connection,
        table: sa.Table,
        where: sa.ColumnElement[bool],
        values: dict[str, Any],
    ) -> sa.Row[Any] | None:
        """Differs because MariaDB has no UPDATE ... RETURNING: the row is chosen and locked
        (FOR UPDATE), updated by id and read back, in the same transaction."""
        chosen = connection.execute(sa.select(table.c.id).where(where).with_for_update()).first()
        if chosen is None:
            return None
        by_id = table.c.id == chosen.id
        connection.execute(sa.update(table).where(by_id).values(**values))
        return connection.execute(sa.select(table).where(by_id)).first()

    def delete_some(self, table: sa.Table, where: sa.ColumnElement[bool], limit: int) -> sa.Delete:
        # Differs because MariaDB refuses LIMIT in an IN (subquery) ("doesn't yet support
        # 'LIMIT & IN/ALL/ANY/SOME subquery'"); its single-table DELETE takes a LIMIT itself.
        return sa.delete(table).where(where).with_dialect_options(mariadb_limit=limit)


EXACT_COUNT_LIMIT = 100_000
EXPIRE_BATCH = 1000
"""Messages a sweep expires per statement (by id, after a read without locks)."""


def _statuses_present(connection: Connection, table: sa.Table) -> list[str]:
    """A loose scan of the status index, one probe per status present: SELECT DISTINCT reads
    the whole index whenever InnoDB's statistics (recalculated in the background after a
    bulk load) do not yet favour its group-by plan."""
    after = sa.bindparam("b_after", type_=table.c.status.type)
    probe = sa.select(table.c.status).where(table.c.status > after).order_by(table.c.status)
    first = sa.select(table.c.status).order_by(table.c.status).limit(1)
    found: list[str] = []
    status = connection.execute(first).scalar()
    while status is not None:
        found.append(status)
        status = connection.execute(probe.limit(1), {"b_after": status}).scalar()
    return found


def _estimated_rows(connection: Connection, table: sa.Table) -> int:
    rows = connection.execute(
        sa.text(
            "SELECT table_rows FROM information_schema.tables"
            " WHERE table_schema = DATABASE() AND table_name = :table"
        ),
        {"table": table.name},
    ).scalar()
    return int(rows or 0)


def _dive(connection: Connection, table: sa.Table, status: str) -> int:
    """The optimizer's estimate of the rows with `status` (EXPLAIN takes no parameters through
    every driver: the status, read from the table, is inlined as an escaped SQL literal)."""
    probe = sa.select(table.c.id).where(table.c.status == status)
    text = str(probe.compile(connection, compile_kwargs={"literal_binds": True}))
    return int(connection.exec_driver_sql("EXPLAIN " + text).mappings().one()["rows"] or 0)


DIALECT = MariaDbDialect()
