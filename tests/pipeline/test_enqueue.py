"""Bulk enqueue of a catalogue: inserted, a re-run changes nothing, changed rows come back as
updates, bad rows land in rejects with their reason."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tablequeue import Queue, connect
from tablequeue.pipeline.cli import pipeline
from tablequeue.pipeline.enqueue import enqueue_frame
from tablequeue.pipeline.messages import MessageColumns
from tablequeue.pipeline.sources import read_source
from tablequeue.spec import QueueResource

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROWS = {"postgresql": 100_000}
"""100,000 on PostgreSQL, 10,000 on the other engines: they write through the same batched path
(`Queue.enqueue_many`), the smaller catalogue only keeps the test's time down (three runs per
engine on a shared CI machine)."""
COLUMNS = MessageColumns(json_column="doc", id_column="sku", header_columns=("source",))


def catalogue(spark: SparkSession, rows: int, price_bump_every: int = 0) -> DataFrame:
    """`rows` products; with `price_bump_every`, every n-th product costs one more."""
    bump = (
        F.when(F.col("id") % price_bump_every == 0, 1).otherwise(0)
        if price_bump_every
        else F.lit(0)
    )
    products = spark.range(rows, numPartitions=4).select(
        F.format_string("SKU-%06d", F.col("id")).alias("sku"),
        F.to_json(
            F.struct(
                F.format_string("SKU-%06d", F.col("id")).alias("Sku"),
                F.concat(F.lit("Product "), F.col("id").cast("string")).alias("Name"),
                ((F.col("id") % 500) + 10 + bump).alias("Price"),
                F.array(F.lit("a"), F.lit("b")).alias("Tags"),
            )
        ).alias("doc"),
        F.lit("catalogue").alias("source"),
    )
    bad = spark.createDataFrame(
        [
            ("BAD-1", '{"Sku": "BAD-1", "Name": ', "catalogue"),
            ("", '{"Sku": ""}', "catalogue"),
            (None, '{"Sku": null}', "catalogue"),
        ],
        "sku string, doc string, source string",
    )
    return products.unionByName(bad)


def test_catalogue_enqueue_rerun_update_and_rejects(
    spark: SparkSession,
    make_queue: Callable[..., Queue],
    db_url: str,
    tmp_path: Path,
) -> None:
    queue = make_queue("catalogue", idempotent=True)
    rows = ROWS.get(queue.storage.dialect.name, 10_000)
    source = tmp_path / "catalogue.parquet"
    catalogue(spark, rows).write.parquet(str(source))
    lines: list[str] = []

    def run(frame: DataFrame, rejects: str) -> dict[str, int]:
        result = enqueue_frame(
            spark,
            frame,
            db_url,
            "catalogue",
            COLUMNS,
            rejects_path=rejects,
            tell=lines.append,
            batch_size=2000,
        )
        return {k: getattr(result, k) for k in ("inserted", "updated", "unchanged", "rejected")}

    first = run(read_source(spark, "parquet", str(source)), str(tmp_path / "rejects-1"))
    assert first == {"inserted": rows, "updated": 0, "unchanged": 0, "rejected": 3}
    # However short the run, the last line told is the totals (timer lines may precede it).
    assert lines[-1].startswith(
        f"enqueue catalogue: finished, inserted {rows:,}, updated 0, unchanged 0, rejected 3, "
    ), lines

    again = run(read_source(spark, "parquet", str(source)), str(tmp_path / "rejects-2"))
    assert again == {"inserted": 0, "updated": 0, "unchanged": rows, "rejected": 3}

    changed = rows // 10
    updates = run(catalogue(spark, rows, price_bump_every=10), str(tmp_path / "rejects-3"))
    assert updates == {
        "inserted": 0,
        "updated": changed,
        "unchanged": rows - changed,
        "rejected": 3,
    }

    t = queue.table
    with queue.storage.transaction() as connection:
        versions: dict[int, int] = dict(
            connection.execute(sa.select(t.c.version, sa.func.count()).group_by(t.c.version)).all()
        )
        statuses = {s for (s,) in connection.execute(sa.select(t.c.status).distinct())}
        sample = connection.execute(
            sa.select(t.c.message, t.c.headers).where(t.c.message_id == "SKU-000010")
        ).one()
    assert versions == {1: rows - changed, 2: changed}
    assert statuses == {"Pending"}
    assert sample.message == {
        "Sku": "SKU-000010",
        "Name": "Product 10",
        "Price": 21,
        "Tags": ["a", "b"],
    }
    assert sample.headers == {"source": "catalogue"}

    rejected = [
        json.loads(line)
        for part in sorted((tmp_path / "rejects-3").glob("part-*.json"))
        for line in part.read_text().splitlines()
    ]
    reasons = sorted(entry["reason"] for entry in rejected)
    assert len(reasons) == 3
    assert reasons[0].startswith("body is not valid JSON")
    assert reasons[1:] == ["messageId (column 'sku') is empty"] * 2
    assert {entry.get("messageId") for entry in rejected} == {"BAD-1", "", None}
    assert {entry["body"] for entry in rejected} >= {'{"Sku": "BAD-1", "Name": '}


def test_cli_enqueue_from_csv_with_schedule_priority_and_body_columns(
    spark: SparkSession, sqlite_url: str, tmp_path: Path
) -> None:
    """The click command end to end: CSV source, chosen body columns, a schedule column, a
    priority column, correlation id and label columns; a row whose schedule is not a time is
    rejected, and so is one whose label is too long."""
    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("mail"))
    later = (datetime.now(UTC) + timedelta(hours=2)).isoformat()
    csv = tmp_path / "mail.csv"
    csv.write_text(
        "OrderId,Email,SendAt,Urgency,Note,Checkout,Title\n"
        f"A-1,a@example.com,{later},5,x,checkout-1,Confirmation A-1\n"
        "A-2,b@example.com,,0,y,,\n"
        "A-3,c@example.com,not a time,1,z,checkout-3,\n"
        f"A-4,d@example.com,,1,z,checkout-4,{'x' * 201}\n"
    )
    result = CliRunner().invoke(
        pipeline,
        [
            "enqueue",
            "mail",
            str(csv),
            "--db",
            sqlite_url,
            "--id-column",
            "OrderId",
            "--body",
            "OrderId,Email",
            "--schedule-column",
            "SendAt",
            "--priority-column",
            "Urgency",
            "--correlation-column",
            "Checkout",
            "--label-column",
            "Title",
            "--rejects",
            str(tmp_path / "rejects"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    counts = json.loads(result.output.strip().splitlines()[-1])
    assert (counts["inserted"], counts["rejected"]) == (2, 2)
    with connect(sqlite_url) as database:
        messages = {m.message_id: m for m in database.queue("mail").messages(limit=10)}
    assert messages["A-1"].message == {"OrderId": "A-1", "Email": "a@example.com"}
    assert (messages["A-1"].app_correlation_id, messages["A-1"].label) == (
        "checkout-1",
        "Confirmation A-1",
    )
    assert (messages["A-2"].app_correlation_id, messages["A-2"].label) == (None, None)
    assert (messages["A-1"].status, messages["A-1"].priority) == ("Sleeping", 5)
    assert (messages["A-2"].status, messages["A-2"].priority) == ("Pending", 0)
    assert "A-3" not in messages and "A-4" not in messages
    rejects = "".join(p.read_text() for p in (tmp_path / "rejects").glob("part-*.json"))
    assert "schedule (column 'SendAt') is not a time" in rejects
    [too_long] = [json.loads(line) for line in rejects.splitlines() if "A-4" in line]
    assert too_long["reason"] == "label: String should have at most 200 characters"
    assert too_long["correlationId"] == "checkout-4"


def test_cli_enqueue_json_lines_with_and_without_status(
    spark: SparkSession, sqlite_url: str, tmp_path: Path
) -> None:
    """A JSON lines source (format from the `.jsonl` suffix, nested values kept) into a queue
    whose default status is OnHold: without `--status` the messages take that default; with
    `--status Pending` new and updated messages take Pending instead; `--status Leased` is one
    error line, and so is a status nobody knows unless `--new-status`."""
    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("mail"))
        database.set_default_status("mail", "OnHold")
    first = tmp_path / "first.jsonl"
    first.write_text(
        '{"id": "J-1", "to": "a@example.com", "items": [{"sku": "S-1", "qty": 2}]}\n'
        '{"id": "J-2", "to": "b@example.com", "items": []}\n'
    )
    second = tmp_path / "second.jsonl"
    second.write_text(
        '{"id": "J-1", "to": "a@example.org", "items": []}\n'
        '{"id": "J-3", "to": "c@example.com", "items": []}\n'
    )

    def enqueue(path: Path, *extra: str) -> Any:
        return CliRunner().invoke(
            pipeline,
            ["enqueue", "mail", str(path), "--db", sqlite_url, "--id-column", "id", *extra],
        )

    result = enqueue(first, "--json")
    assert result.exit_code == 0, result.output
    counts = json.loads(result.output.strip().splitlines()[-1])
    assert (counts["inserted"], counts["rejected"]) == (2, 0)
    with connect(sqlite_url) as database:
        messages = {m.message_id: m for m in database.queue("mail").messages(limit=10)}
    assert messages["J-1"].message == {
        "id": "J-1",
        "to": "a@example.com",
        "items": [{"sku": "S-1", "qty": 2}],
    }
    assert {m.status for m in messages.values()} == {"OnHold"}

    result = enqueue(second, "--status", "Pending")
    assert result.exit_code == 0, result.output
    assert "mail: inserted 1, updated 1, unchanged 0, rejected 0" in result.output
    with connect(sqlite_url) as database:
        messages = {m.message_id: m for m in database.queue("mail").messages(limit=10)}
    statuses = {key: (m.status, m.version) for key, m in messages.items()}
    assert statuses == {"J-1": ("Pending", 2), "J-2": ("OnHold", 1), "J-3": ("Pending", 1)}
    assert messages["J-1"].message["to"] == "a@example.org"

    refused = enqueue(second, "--status", "Leased")
    assert refused.exit_code == 1
    assert "error: status 'Leased' is set only by leasing" in refused.output

    # A status one letter off is refused before Spark starts, with the closest known one; a new
    # status goes in when --new-status says it is meant.
    refused = enqueue(second, "--status", "Pendng")
    assert refused.exit_code == 1
    assert (
        "error: status 'Pendng' is not a known status and no message of queue 'mail' has it; "
        "did you mean 'Pending'? known: Abandoned, Cancelled, Error, Expired, OnHold, Pending, "
        "Processed, Sleeping (--new-status sets it anyway)"
    ) in refused.output
    result = enqueue(second, "--status", "Parked", "--new-status")
    assert result.exit_code == 0, result.output
    with connect(sqlite_url) as database:
        messages = {m.message_id: m for m in database.queue("mail").messages(limit=10)}
    assert {key: m.status for key, m in messages.items()} == {
        "J-1": "Parked",
        "J-2": "OnHold",
        "J-3": "Parked",
    }
