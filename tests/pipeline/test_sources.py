"""Sources and JDBC targets: tablequeue URLs become JDBC URLs; a JDBC table is a source."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from tablequeue import connect
from tablequeue.errors import InvalidInput
from tablequeue.pipeline.cli import pipeline
from tablequeue.pipeline.jdbc import jdbc_target
from tablequeue.spec import QueueResource

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_jdbc_targets_from_tablequeue_urls(tmp_path: Path) -> None:
    postgres = jdbc_target("postgresql://app:s3cret@db.example:5433/queues?sslmode=require")
    assert postgres.url == "jdbc:postgresql://db.example:5433/queues?sslmode=require"
    assert postgres.driver == "org.postgresql.Driver"
    assert postgres.properties == {"user": "app", "password": "s3cret"}
    assert "s3cret" not in postgres.url
    assert jdbc_target("postgresql+psycopg://db/q").url == "jdbc:postgresql://db/q"
    sqlite = jdbc_target(f"sqlite:///{tmp_path}/q.db")
    assert (sqlite.url, sqlite.driver) == (f"jdbc:sqlite:{tmp_path}/q.db", "org.sqlite.JDBC")
    kept = jdbc_target("jdbc:sqlserver://sql.example:1433;databaseName=dw")
    assert kept.driver == "com.microsoft.sqlserver.jdbc.SQLServerDriver"
    assert "driver" not in jdbc_target("jdbc:oracle:thin:@db:1521/x").options()
    sql_server = jdbc_target("mssql+pyodbc://sa:pw@sql.example:1433/dw")
    assert sql_server.url == "jdbc:sqlserver://sql.example:1433;databaseName=dw"
    maria = jdbc_target("mysql+pyodbc://app@maria:3307/q?driver=MariaDB+ODBC")
    assert (maria.url, maria.driver) == (
        "jdbc:mysql://maria:3307/q?permitMysqlScheme",
        "org.mariadb.jdbc.Driver",
    )
    with pytest.raises(InvalidInput):
        jdbc_target("oracle://db/x")


def test_enqueue_from_a_jdbc_table(spark: SparkSession, tmp_path: Path) -> None:
    source = tmp_path / "warehouse.db"
    with sqlite3.connect(source) as warehouse:
        warehouse.execute("CREATE TABLE outbox (id INTEGER PRIMARY KEY, payload TEXT)")
        warehouse.executemany(
            "INSERT INTO outbox (payload) VALUES (?)",
            [(f'{{"OrderId": "A-{n}"}}',) for n in range(50)] + [("not json",)],
        )
    queue_url = f"sqlite:///{tmp_path / 'queues.db'}"
    with connect(queue_url) as database:
        database.apply(QueueResource.from_name("outbox"))
    result = CliRunner().invoke(
        pipeline,
        [
            "enqueue",
            "outbox",
            f"sqlite:///{source}",
            "--format",
            "jdbc",
            "--table",
            "outbox",
            "--json-column",
            "payload",
            "--id-column",
            "id",
            "--db",
            queue_url,
            "--rejects",
            str(tmp_path / "rejects"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "inserted 50, updated 0, unchanged 0, rejected 1" in result.output
    with connect(queue_url) as database:
        queue = database.queue("outbox")
        assert queue.count() == 50
        assert {m.message["OrderId"] for m in queue.messages(limit=100)} == {
            f"A-{n}" for n in range(50)
        }
