"""Sources and JDBC targets: tablequeue URLs become JDBC URLs; a JDBC table is a source; a CSV
file as the standard writers write it is a source without reader options."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path
from typing import Any

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


BODIES = [
    {"Note": 'say "hi", then leave', "City": "Zürich", "Path": "C:\\temp\\"},
    {"Lines": "one\ntwo", "Name": "名前", "Items": [{"Sku": "S-1", "Qty": 2}]},
    {"Empty": "", "Quote": '"'},
]
"""JSON bodies with quotes, commas, backslashes, line breaks and non-ASCII text."""


def enqueue_csv(path: Path, queue_url: str, *options: str) -> dict[str | None, Any]:
    """`tablequeue pipeline enqueue` of a CSV whose Payload column is the body: every row
    inserted, none rejected; the messages by id."""
    rejects = path.parent / "rejects"
    with connect(queue_url) as database:
        database.apply(QueueResource.from_name("orders"))
    result = CliRunner().invoke(
        pipeline,
        [
            *("enqueue", "orders", str(path), "--json-column", "Payload", "--id-column", "Id"),
            *("--header-column", "Source", "--db", queue_url, "--rejects", str(rejects)),
            *("--json", *options),
        ],
    )
    assert result.exit_code == 0, result.output
    counts = json.loads(result.output.strip().splitlines()[-1])
    assert counts["rejected"] == 0, "".join(p.read_text() for p in rejects.glob("part-*"))
    with connect(queue_url) as database:
        return {m.message_id: m for m in database.queue("orders").messages(limit=10)}


def test_a_standard_csv_is_read_without_options(spark: SparkSession, tmp_path: Path) -> None:
    """Python's csv module writes what Excel and PostgreSQL's COPY ... CSV write: quotes
    doubled inside quoted fields, line breaks kept inside them (here a pretty-printed body)."""
    source = tmp_path / "orders.csv"
    with source.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["Id", "Payload", "Source"])
        for n, body in enumerate(BODIES):
            text = json.dumps(body, ensure_ascii=False, indent=2 if n == 1 else None)
            writer.writerow([f"C-{n}", text, f"shop, {n}"])
    assert '""Note"": ""say \\""hi\\"", then leave""' in source.read_text(encoding="utf-8")
    messages = enqueue_csv(source, f"sqlite:///{tmp_path / 'queues.db'}")
    assert {key: m.message for key, m in messages.items()} == {
        f"C-{n}": body for n, body in enumerate(BODIES)
    }
    assert {key: m.headers for key, m in messages.items()} == {
        f"C-{n}": {"Source": f"shop, {n}"} for n in range(len(BODIES))
    }


def test_reader_options_override_the_csv_defaults(spark: SparkSession, tmp_path: Path) -> None:
    """A file with Spark's own CSV convention (a backslash before a quote) reads with the
    option that says so, in any case: the user's options win over the defaults."""
    bodies = [{"Note": "it's, fine", "City": "Zürich"}, {"N": 1}]
    source = tmp_path / "orders.csv"
    with source.open("w", encoding="utf-8") as file:
        file.write("Id,Payload,Source\n")
        for n, body in enumerate(bodies):
            text = json.dumps(body, ensure_ascii=False).replace('"', '\\"')
            file.write(f'C-{n},"{text}",shop\n')
    assert '"{\\"Note\\": \\"it\'s, fine\\"' in source.read_text(encoding="utf-8")
    messages = enqueue_csv(source, f"sqlite:///{tmp_path / 'queues.db'}", "--option", "ESCAPE=\\")
    assert {key: m.message for key, m in messages.items()} == {
        f"C-{n}": body for n, body in enumerate(bodies)
    }


def test_what_cannot_be_read_is_one_error_line(spark: SparkSession, tmp_path: Path) -> None:
    """An unknown format, an empty folder, a JDBC table that is not there and a mistyped
    archive root: each one line naming what and where, exit status 1, no traceback."""
    queue_url = f"sqlite:///{tmp_path / 'queues.db'}"
    with connect(queue_url) as database:
        database.apply(QueueResource.from_name("orders"))
    empty = tmp_path / "empty"
    empty.mkdir()
    warehouse = tmp_path / "warehouse.db"
    sqlite3.connect(warehouse).close()
    runs = {
        "unknown --format 'parkay': csv, json, parquet, jdbc or a format Spark has a package for": (
            "enqueue",
            "orders",
            str(empty),
            "--format",
            "parkay",
        ),
        f"no parquet data in {empty} (an empty folder?)": ("enqueue", "orders", str(empty)),
        f"cannot read table outbox of jdbc:sqlite:{warehouse}: ": (
            *("enqueue", "orders", f"sqlite:///{warehouse}"),
            *("--format", "jdbc", "--table", "outbox"),
        ),
        f"archive not found: {tmp_path / 'archvie'}": (
            *("report", "orders", "--archive", str(tmp_path / "archvie")),
        ),
    }
    said = {}
    for expected, arguments in runs.items():
        result = CliRunner().invoke(pipeline, [*arguments, "--db", queue_url])
        assert isinstance(result.exception, SystemExit), (arguments, result.output)
        assert result.exit_code == 1, (arguments, result.output)
        said[expected] = result.stderr.splitlines()
        assert len(said[expected]) == 1, said[expected]
        assert said[expected][0].startswith(f"error: {expected}"), said[expected]
    assert said[f"cannot read table outbox of jdbc:sqlite:{warehouse}: "][0].endswith(
        "(no such table: outbox)"
    )
    # An archive root with nothing archived yet is no error: the report is the tables'.
    report = ["report", "orders", "--archive", str(empty), "--json", "--db", queue_url]
    result = CliRunner().invoke(pipeline, report)
    assert result.exit_code == 0, result.output
