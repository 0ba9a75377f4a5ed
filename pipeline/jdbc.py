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

from tablequeue.errors import InvalidInput

DRIVERS = {
    "postgresql": "org.postgresql.Driver",
    "sqlite": "org.sqlite.JDBC",
    "mariadb": "org.mariadb.jdbc.Driver",
    "sqlserver": "com.microsoft.sqlserver.jdbc.SQLServerDriver",
}
"""Driver classes by JDBC subprotocol (`jdbc:<subprotocol>:...`)."""
SUBPROTOCOLS = {"postgresql": "postgresql", "mariadb": "mariadb", "mysql": "mariadb"}
"""SQLAlchemy backend -> JDBC subprotocol, for URLs of the form //host:port/database."""
TIMESTAMP_COLUMNS = (
    "process_after",
    "expires_at",
    "lease_expires_at",
    "created_at",
    "updated_at",
    "processed_at",
)
JSON_COLUMNS = ("message", "previous_message", "headers", "result", "progress")


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
    if backend not in SUBPROTOCOLS:
        raise InvalidInput(f"no JDBC driver known for {backend!r} URLs: give a jdbc: URL")
    subprotocol = SUBPROTOCOLS[backend]
    query = "&".join(f"{k}={v}" for k, v in url.query.items() if isinstance(v, str))
    jdbc_url = f"jdbc:{subprotocol}://{host}{port}/{url.database or ''}"
    return JdbcTarget(
        jdbc_url + (f"?{query}" if query else ""), DRIVERS[subprotocol], properties, backend
    )


def quoted_table(database_url: str, table: str) -> str:
    """The table name as the engine quotes it (names are validated by tablequeue first)."""
    dialect = sa.make_url(database_url).get_dialect()()
    return str(dialect.identifier_preparer.quote(table))


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
    """
    target = jdbc_target(database_url)
    reader = spark.read.format("jdbc").options(**target.options())
    reader = reader.option("dbtable", quoted_table(database_url, table)).options(**(options or {}))
    if target.backend == "sqlite":
        reader = reader.option(
            "customSchema",
            ", ".join(f"{name} STRING" for name in (*TIMESTAMP_COLUMNS, *JSON_COLUMNS))
            + ", id LONG",
        )
    frame = reader.load()
    converted: dict[str, Column] = {"id": F.col("id").cast("long")}
    for name in TIMESTAMP_COLUMNS:
        converted[name] = F.col(name).cast("timestamp")
    return frame.withColumns(converted)
