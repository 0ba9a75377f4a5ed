"""SQL Server (2017 or later) through pyodbc and Microsoft's ODBC driver (`mssql+pyodbc`).

- The lease is the shared UPDATE whose candidates are read `WITH (UPDLOCK, ROWLOCK, READPAST)`
  (skip rows other transactions hold), returning the leased rows with `OUTPUT inserted.*`.
- Identities are upserted by `MERGE ... WITH (HOLDLOCK)` (`merge.py`); per-message
  parameters travel as one JSON document read by `OPENJSON(?) WITH (...)`: one statement and
  one round trip per batch (batches of statements without a JSON source use pyodbc's
  `fast_executemany`).
- Columns: bigint identity, nvarchar with a binary collation (identities and statuses compare
  exactly), nvarchar(max) JSON with an `ISJSON` check, datetime2(6) in UTC (`SYSUTCDATETIME()`),
  uniqueidentifier; filtered indexes for leasing and identities. No notifications: workers poll.

No SQL Server runs where tablequeue is tested: every statement is kept as golden SQL
(tests/core/golden/mssql) and parsed as T-SQL; the conformance suite runs against a server
named by TABLEQUEUE_TEST_MSSQL_URL.
"""

from __future__ import annotations

import json
import math
import uuid
from collections import namedtuple
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mssql
from sqlalchemy.dialects.mssql.base import MSDDLCompiler, MSSQLCompiler, MSTypeCompiler
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.sql.selectable import Select

from ...sqltypes import UtcDateTime
from ..dialect import Dialect, accumulated
from ..queries import Queries
from ..types import Capabilities, EnqueueBatch, JsonKind, JsonPath, TenantUrlRules, path_text
from .json_index import MssqlIndexes
from .merge import Merge
from .queries import MssqlQueries

COLLATION = "Latin1_General_100_BIN2_UTF8"
PER_ROW_PARAMETER = "b_rows"
_OPENJSON_TYPES: dict[JsonKind, int] = {"string": 1, "number": 2, "boolean": 3}
"""OPENJSON's `type` column: 0 null, 1 string, 2 number, 3 true/false, 4 array, 5 object."""
_LOCK_HINT = "WITH (UPDLOCK, ROWLOCK, READPAST)"
Enqueued = namedtuple("Enqueued", "id message_id tracking_id version status")


class _TypeCompiler(MSTypeCompiler):
    """datetime2(6) for UTC timestamps (not datetimeoffset); text is always nvarchar."""

    def visit_datetime(self, type_: Any, **kw: Any) -> str:
        return "DATETIME2(6)"

    def visit_VARCHAR(self, type_: Any, **kw: Any) -> str:
        return str(self.visit_NVARCHAR(type_, **kw))  # type: ignore[no-untyped-call]

    def visit_text(self, type_: Any, **kw: Any) -> str:
        return "NVARCHAR(max)"


class _DdlCompiler(MSDDLCompiler):
    """Text columns compare exactly (binary collation); JSON columns must hold JSON."""

    def get_column_specification(self, column: sa.Column[Any], **kwargs: Any) -> str:
        text = str(super().get_column_specification(column, **kwargs))  # type: ignore[no-untyped-call]
        if isinstance(column.type, sa.String | sa.JSON):
            name = self.preparer.format_column(column)
            type_ = self.dialect.type_compiler_instance.process(column.type)
            text = text.replace(f"{name} {type_}", f"{name} {type_} COLLATE {COLLATION}", 1)
        if isinstance(column.type, sa.JSON):
            text += f" CHECK (ISJSON({self.preparer.format_column(column)}) = 1)"
        return text


class _Compiler(MSSQLCompiler):
    """A bit column as a CASE condition is `column = 1` (T-SQL has no boolean values); the
    lease candidates keep their ORDER BY under their own `TOP (?)`."""

    def order_by_clause(self, select: Any, **kw: Any) -> str:
        if any(str(prefix).startswith("TOP") for prefix, _ in select._prefixes):
            return str(SQLCompiler.order_by_clause(self, select, **kw))  # type: ignore[no-untyped-call]
        return str(super().order_by_clause(select, **kw))  # type: ignore[no-untyped-call]

    def visit_case(self, clause: Any, **kw: Any) -> str:
        if not any(_bare_bit(condition) for condition, _ in clause.whens):
            return str(super().visit_case(clause, **kw))  # type: ignore[no-untyped-call]
        whens = [
            (condition == sa.literal_column("1") if _bare_bit(condition) else condition, result)
            for condition, result in clause.whens
        ]
        return str(self.process(sa.case(*whens, else_=clause.else_, value=clause.value), **kw))


def _bare_bit(condition: Any) -> bool:
    return isinstance(condition, sa.ColumnClause) and isinstance(condition.type, sa.Boolean)


class _OpenJson(FunctionElement[Any]):
    """`OPENJSON(rows) WITH (...)`: the second argument is the WITH clause's text."""

    name = "openjson"
    inherit_cache = True


@compiles(_OpenJson, "mssql")
def _compile_openjson(element: _OpenJson, compiler: Any, **kw: Any) -> str:
    rows, shape = element.clauses
    return f"OPENJSON({compiler.process(rows, **kw)}) {compiler.process(shape, **kw)}"


def _openjson_type(type_: sa.types.TypeEngine[Any]) -> str:
    if isinstance(type_, sa.Boolean):
        return "BIT"
    if isinstance(type_, sa.Integer):
        return "BIGINT"
    if isinstance(type_, sa.Float):
        return "FLOAT"
    if isinstance(type_, UtcDateTime | sa.DateTime):
        return "DATETIME2(6)"
    if isinstance(type_, sa.Uuid):
        return "UNIQUEIDENTIFIER"
    if isinstance(type_, sa.String) and type_.length and not isinstance(type_, sa.Text):
        return f"NVARCHAR({type_.length})"
    return "NVARCHAR(max)"  # text, and JSON sent as its text


def _per_row_value(value: Any) -> Any:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: tablequeue needs timezone-aware times")
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not a per-row parameter type")


def _bound_path(path: JsonPath) -> sa.BindParameter[str]:
    return sa.bindparam(None, path_text(path), type_=sa.Unicode)


def _member(column: sa.ColumnElement[Any], path: JsonPath) -> Any:
    """The last step of `path` as an OPENJSON row (key, value, type) of its parent: OPENJSON
    lists an array's items under keys "0", "1", ..., so an index step also needs an array."""
    parent, last = path[:-1], path[-1]
    members = sa.func.openjson(column, _bound_path(parent)).table_valued("key", "value", "type")
    members = members.alias("j")
    condition = members.c.key == sa.bindparam(None, str(last), type_=sa.Unicode)
    if isinstance(last, int):
        array = sa.func.json_query(column, _bound_path(parent))
        condition = sa.and_(condition, sa.func.left(array, 1) == "[")
    return members, condition


class MssqlDialect(Dialect):
    name = "mssql"
    url_schemes = {"mssql": "mssql+pyodbc", "mssql+pyodbc": "mssql+pyodbc"}
    url_hint = "mssql+pyodbc://"
    capabilities = Capabilities(
        notifies=False, estimates_counts=False, vacuums=False, first_schema_version=2
    )
    json_type: sa.types.TypeEngine[Any] = mssql.JSON()
    json_index_strategy = MssqlIndexes

    def __init__(self) -> None:
        self._json_parameters: set[str] = set()

    def connect_args(
        self, url: sa.URL, connect_seconds: float | None, statement_seconds: float | None
    ) -> dict[str, Any]:
        """Differs because each driver names its bounds: pyodbc's login timeout (`timeout`).
        (A statement bound would be pyodbc's per-connection
        `timeout` attribute, set after connecting: not applied yet.)"""
        if connect_seconds and "timeout" not in url.query:
            return {"timeout": max(1, math.ceil(connect_seconds))}
        return {}

    def tenant_url_rules(self, url: sa.URL) -> TenantUrlRules:
        """Differs because pyodbc builds an ODBC connection string of every URL parameter:
        `odbc_connect` replaces it whole, a DRIVER path loads a library, a DSN is looked up in
        the client's files."""
        return TenantUrlRules(
            parameters=frozenset({"driver", "timeout", "encrypt", "trustservercertificate"}),
            connect_timeout="timeout",
            odbc=True,
        )

    def configure_engine(self, engine: Engine) -> None:
        """Differs because SQLAlchemy's SQL Server defaults do not fit the tables: timestamps
        as DATETIME2(6) (DATETIME is accurate to about 3 ms) and text as NVARCHAR
        (`_TypeCompiler`); text in a binary collation (identities and statuses compare
        exactly) and JSON with an ISJSON check (`_DdlCompiler`); a bit column in CASE compared
        to 1 (T-SQL has no boolean values) and the lease candidates' ORDER BY kept under TOP,
        which SQLAlchemy drops from a subquery without a limit of its own (`_Compiler`);
        pyodbc's fast_executemany, which sends the parameters of a batch without a JSON source
        as arrays instead of row by row."""
        engine.dialect.type_compiler_instance = _TypeCompiler(engine.dialect)
        engine.dialect.ddl_compiler = _DdlCompiler
        engine.dialect.statement_compiler = _Compiler
        if hasattr(engine.dialect, "fast_executemany"):
            engine.dialect.fast_executemany = True  # batches without a JSON source

    # --- SQL parts --------------------------------------------------------------------------

    def identity(self, connection: Connection) -> tuple[Any, ...]:
        return tuple(
            connection.execute(sa.text("SELECT @@SERVERNAME, DB_NAME(), SCHEMA_NAME()")).one()
        )

    def autocommits(self, dbapi_connection: Any) -> bool:
        return bool(dbapi_connection.autocommit)  # pyodbc

    def now(self) -> sa.ColumnElement[datetime]:
        return sa.func.sysutcdatetime(type_=sa.DateTime())

    def seconds_from_now(self, seconds: sa.ColumnElement[Any]) -> sa.ColumnElement[datetime]:
        # DATEADD takes an int: whole days, whole seconds and microseconds apart (100 years
        # of microseconds overflow it), each truncated toward zero so that they add up.
        day = sa.literal_column("86400e0", sa.Float)
        days = sa.cast(seconds / day, sa.Integer)
        rest = seconds - days * day
        whole = sa.cast(rest, sa.Integer)
        fraction = (rest - whole) * sa.literal_column("1000000")
        micros = sa.cast(sa.func.round(fraction, sa.literal_column("0")), sa.Integer)
        at = sa.func.dateadd(sa.literal_column("microsecond"), micros, self.now())
        at = sa.func.dateadd(sa.literal_column("second"), whole, at)
        return sa.func.dateadd(sa.literal_column("day"), days, at, type_=sa.DateTime())

    def json_scalar(
        self, column: sa.ColumnElement[Any], path: JsonPath, kind: JsonKind
    ) -> sa.ColumnElement[Any]:
        members, condition = _member(column, path)
        value: sa.ColumnElement[Any]
        if kind == "string":
            value = members.c.value.collate(COLLATION)
        elif kind == "number":
            value = sa.cast(members.c.value, sa.Float)
        else:
            value = sa.case((members.c.value == "true", 1), else_=0)
        typed = sa.case((members.c.type == _OPENJSON_TYPES[kind], value), else_=sa.null())
        return sa.select(typed).select_from(members).where(condition).scalar_subquery()

    def json_is_null(self, column: sa.ColumnElement[Any], path: JsonPath) -> sa.ColumnElement[bool]:
        members, condition = _member(column, path)
        present = sa.select(members.c.type).select_from(members).where(condition)
        return sa.func.coalesce(present.scalar_subquery(), 0) == 0

    def is_true(self, condition: sa.ColumnElement[bool]) -> sa.ColumnElement[bool]:
        # Differs because T-SQL has no boolean values: a condition is never an argument of
        # COALESCE.
        return sa.case((condition, 1), else_=0) == 1

    def insert(self, table: sa.Table) -> Insert:
        return sa.insert(table)

    def upsert(
        self, table: sa.Table, key: Sequence[str], values: dict[str, Any], update: Sequence[str]
    ) -> sa.Executable:
        source = sa.select(
            *(_value(table.c[name], value).label(name) for name, value in values.items())
        ).subquery("s")
        return Merge(table, source, [(c, source.c[c]) for c in update], None, keys=key)

    def excluded(self, insert: Insert) -> Any:
        return _source(insert).c

    def on_conflict_message_id(
        self, insert: Insert, set_: dict[str, Any], where: sa.ColumnElement[bool] | None
    ) -> Insert:
        """MERGE ... WHEN MATCHED [AND `where`] THEN UPDATE."""
        table = insert.table
        assert isinstance(table, sa.Table)
        merge = Merge(table, _source(insert), list(set_.items()), where)
        return merge  # type: ignore[return-value]  # executed like the Insert it replaces

    def keep_message_id(self, insert: Insert) -> Insert:
        """MERGE without WHEN MATCHED: only new identities are inserted."""
        table = insert.table
        assert isinstance(table, sa.Table)
        return Merge(table, _source(insert), [], None)  # type: ignore[return-value]

    def bodies_differ(
        self, stored: sa.ColumnElement[Any], new: sa.ColumnElement[Any]
    ) -> sa.ColumnElement[bool]:
        """Differs because the texts are compared as bytes: the server's default collation
        may ignore case."""
        as_bytes = mssql.VARBINARY("max")  # type: ignore[no-untyped-call]
        return sa.cast(stored, as_bytes) != sa.cast(new, as_bytes)

    def json_text(self, column: sa.ColumnElement[Any]) -> sa.ColumnElement[str]:
        """Differs because the column already is text, in a binary collation: a CAST could
        compare in the server's default collation, which may ignore case."""
        return sa.type_coerce(column, sa.UnicodeText())

    def accumulate(
        self,
        table: sa.Table,
        row: dict[str, Any],
        *,
        add: Sequence[str],
        largest: Sequence[str],
        latest: Sequence[str],
    ) -> sa.Executable:
        """Differs because SQL Server has no INSERT ... ON CONFLICT: MERGE ... WITH (HOLDLOCK)
        on the primary key, from one row of bound values (HOLDLOCK keeps the key range locked
        from the match to the insert, so two writers of the same new key cannot both insert
        it)."""
        values = [sa.literal(value, table.c[name].type).label(name) for name, value in row.items()]
        source = sa.select(*values).subquery("s")
        set_ = accumulated(table, source.c, add, largest, latest)
        keys = [column.name for column in table.primary_key.columns]
        return Merge(table, source, list(set_.items()), None, keys)

    def lock_candidates(self, select: Select[Any], lease_index: str) -> Select[Any]:
        # TOP (n) rather than SQLAlchemy's ROW_NUMBER() for a bound limit: the locking read
        # stops after n rows instead of locking every due message.
        top = sa.text("TOP (:b_n)").bindparams(sa.bindparam("b_n", type_=sa.Integer()))
        locked = select.limit(None).prefix_with(top, dialect="mssql")
        return locked.with_hint(select.get_final_froms()[0], _LOCK_HINT, "mssql")

    def per_row(self, columns: Sequence[sa.ColumnClause[Any]]) -> sa.TableValuedAlias:
        """Differs because SQL Server reads every message's row from one JSON parameter with
        OPENJSON(...) WITH (...): one statement and one round trip per batch."""
        self._json_parameters |= {c.name for c in columns if isinstance(c.type, sa.JSON)}
        definitions = ", ".join(f"{c.name} {_openjson_type(c.type)} '$.{c.name}'" for c in columns)
        rows = sa.bindparam(PER_ROW_PARAMETER, type_=sa.UnicodeText)
        shape: sa.ColumnElement[Any] = sa.literal_column(f"WITH ({definitions})")
        return _OpenJson(rows, shape).table_valued(*columns).alias("b")

    def per_row_parameters(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        # Differs because `per_row` reads one JSON text (OPENJSON). JSON values travel as their
        # text, as canonical_json writes it (OPENJSON's AS JSON would drop a JSON string); None
        # is left out, so that it is SQL NULL.
        present = [
            {
                key: json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                if key in self._json_parameters
                else value
                for key, value in row.items()
                if value is not None
            }
            for row in rows
        ]
        text = json.dumps(
            present,
            default=_per_row_value,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
        return {PER_ROW_PARAMETER: text}

    # --- whole operations -------------------------------------------------------------------

    def queries(self, table: sa.Table, registry: sa.Table, rate_limits: sa.Table) -> Queries:
        """Differs because T-SQL has no DELETE ... USING: `MssqlQueries` deletes completed
        messages by a semi-join on the per-row source."""
        return MssqlQueries(self, table, registry, rate_limits)

    def enqueue_round(self, connection: Connection, queries: Queries, batch: EnqueueBatch) -> Any:
        """Differs because MERGE's OUTPUT rows are untyped: the tracking id arrives as text."""
        written = super().enqueue_round(connection, queries, batch)
        if not batch.upsert:
            return written
        return [
            Enqueued(r.id, r.message_id, uuid.UUID(str(r.tracking_id)), r.version, r.status)
            for r in written
        ]


def _value(column: sa.Column[Any], value: Any) -> sa.ColumnElement[Any]:
    if isinstance(value, sa.ColumnElement):
        return value
    return sa.bindparam(None, value, type_=column.type)


def _source(insert: Insert) -> sa.Subquery:
    """The rows an INSERT ... SELECT inserts, as a subquery with the table's column names."""
    select: Select[Any] | None = getattr(insert, "select", None)
    names = insert._select_names
    assert select is not None and names is not None
    columns = list(select.selected_columns)
    labelled = select.with_only_columns(
        *(column.label(name) for column, name in zip(columns, names, strict=True))
    )
    return labelled.subquery("s")


DIALECT = MssqlDialect()
