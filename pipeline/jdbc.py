"""Reaching a tablequeue database from Spark's JDBC source, and reading a queue table with it.

tablequeue URLs (`postgresql://user:pw@host/db`, `sqlite:///file.db`) become JDBC URLs with
the driver class Spark needs; the password travels as a connection property, not in the URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from tablequeue import Message
from tablequeue.errors import InvalidInput

DRIVERS = {
    "postgresql": "org.postgresql.Driver",
    "sqlite": "org.sqlite.JDBC",
    "mariadb": "org.mariadb.jdbc.Driver",
    "sqlserver": "com.microsoft.sqlserver.jdbc.SQLServerDriver",
}
"""Driver classes by JDBC subprotocol (`jdbc:<subprotocol>:...`)."""
TIMESTAMP_COLUMNS = (
    "process_after",
    "expires_at",
    "lease_expires_at",
    "created_at",
    "updated_at",
    "processed_at",
    "started_at",
)
JSON_COLUMNS = ("message", "previous_message", "headers", "result", "progress")
CUSTOM_SCHEMAS = {
    "sqlite": ", ".join(f"{name} STRING" for name in (*TIMESTAMP_COLUMNS, *JSON_COLUMNS))
    + ", id LONG",
}
"""Columns whose type Spark cannot take from the engine's JDBC metadata, per engine."""


@dataclass(frozen=True)
class JdbcTarget:
    """A JDBC URL with its driver class (None: Spark asks DriverManager) and properties."""

    url: str
    driver: str | None
    properties: dict[str, str] = field(default_factory=dict)
    backend: str = ""

    def options(self) -> dict[str, str]:
        driver = {"driver": self.driver} if self.driver else {}
        return {"url": self.url, **driver, **self.properties}


def jdbc_target(database_url: str) -> JdbcTarget:
    """The JDBC form of a tablequeue (SQLAlchemy-style) database URL; a `jdbc:...` URL is kept
    (with `--option driver=...` for a driver not named here)."""
    if database_url.startswith("jdbc:"):
        subprotocol = database_url.split(":")[1]
        return JdbcTarget(database_url, DRIVERS.get(subprotocol), backend=subprotocol)
    url = sa.make_url(database_url)
    backend = url.get_backend_name()
    properties = {}
    if url.username:
        properties["user"] = url.username
    if url.password is not None:
        properties["password"] = str(url.password)
    host = url.host or "localhost"
    port = f":{url.port}" if url.port else ""
    if backend == "sqlite":
        if not url.database:
            raise InvalidInput("a SQLite URL needs a file: sqlite:///path/to/file.db")
        path = Path(url.database).resolve()
        return JdbcTarget(f"jdbc:sqlite:{path}", DRIVERS["sqlite"], {}, backend)
    if backend == "mssql":
        jdbc_url = f"jdbc:sqlserver://{host}{port};databaseName={url.database or ''}"
        return JdbcTarget(jdbc_url, DRIVERS["sqlserver"], properties, backend)
    database = url.database or ""
    if backend == "postgresql":
        # Its URL options (sslmode, ...) mean the same to the JDBC driver; other engines' query
        # strings configure their Python driver (pyodbc's `driver=`, ...), not JDBC.
        query = "&".join(f"{k}={v}" for k, v in url.query.items() if isinstance(v, str))
        jdbc_url = f"jdbc:postgresql://{host}{port}/{database}" + (f"?{query}" if query else "")
        return JdbcTarget(jdbc_url, DRIVERS["postgresql"], properties, backend)
    if backend in ("mariadb", "mysql"):
        # Spark's MySQL dialect (backtick quoting) takes jdbc:mysql URLs only; MariaDB's driver
        # accepts them with permitMysqlScheme.
        jdbc_url = f"jdbc:mysql://{host}{port}/{database}?permitMysqlScheme"
        return JdbcTarget(jdbc_url, DRIVERS["mariadb"], properties, backend)
    raise InvalidInput(f"no JDBC driver known for {backend!r} URLs: give a jdbc: URL")


def table_source(database_url: str, table: str) -> str:
    """What Spark's `dbtable` option reads for a queue table: its name as the engine quotes it,
    or on MariaDB a subquery that casts the uuid column (a type Spark does not know) to text.
    Table names are validated by tablequeue; no value goes into this text."""
    dialect = sa.make_url(database_url).get_dialect()()
    if dialect.name not in ("mysql", "mariadb"):
        return str(dialect.identifier_preparer.quote(table))
    columns = [
        sa.cast(sa.column(name), sa.String(36)).label(name)
        if name == "tracking_id"
        else sa.column(name)
        for name in Message.__dataclass_fields__
    ]
    select = sa.select(*columns).select_from(sa.table(table))
    return f"({select.compile(dialect=dialect)}) AS queue_rows"


def read_queue_table(
    spark: SparkSession,
    database_url: str,
    table: str,
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """A queue table as a DataFrame: JSON columns as text, times as UTC timestamps, id as long.

    SQLite keeps times as ISO text, which its JDBC driver cannot turn into timestamps: they are
    read as strings and parsed here (the session time zone is UTC, as the text is). Its JSON
    columns have numeric affinity, which Spark would read as decimals: they are read as text.
    MariaDB's uuid column is cast to text by the query (see table_source).
    """
    target = jdbc_target(database_url)
    reader = spark.read.format("jdbc").options(**target.options())
    reader = reader.option("dbtable", table_source(database_url, table)).options(**(options or {}))
    custom = CUSTOM_SCHEMAS.get(target.backend)
    if custom:
        reader = reader.option("customSchema", custom)
    frame = reader.load()
    converted: dict[str, Column] = {"id": F.col("id").cast("long")}
    for name in TIMESTAMP_COLUMNS:
        converted[name] = F.col(name).cast("timestamp")
    return frame.withColumns(converted)
