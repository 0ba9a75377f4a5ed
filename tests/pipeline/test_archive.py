"""Archive with a crash between writing the Parquet and deleting the rows, then a re-run:
every message ends in exactly one place, the table or the archive, once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from pyspark.sql import SparkSession

from tablequeue import Queue, connect
from tablequeue.pipeline.archive import CRASH_ENV, CRASH_EXIT_CODE, DEFAULT_STATUSES, archive_queue
from tablequeue.pipeline.cli import pipeline
from tablequeue.pipeline.journal import STARTED, WRITTEN, Journal
from tablequeue.spec import QueueResource

from .history import fill_history

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MESSAGES = 3000


def table_ids(queue: Queue) -> set[int]:
    t = queue.table
    with queue.storage.transaction() as connection:
        return {row.id for row in connection.execute(sa.select(t.c.id))}


def archived_ids(spark: SparkSession, root: Path) -> list[int]:
    return [row.id for row in spark.read.parquet(str(root)).select("id").collect()]


def test_crash_between_write_and_delete_then_rerun(
    spark: SparkSession, make_queue: Callable[..., Queue], db_url: str, tmp_path: Path
) -> None:
    queue = make_queue("jobs")
    fill_history(queue, MESSAGES)
    everything = table_ids(queue)
    t = queue.table
    cutoff = datetime.now(UTC) - timedelta(days=1)
    with queue.storage.transaction() as connection:
        eligible = {
            row.id
            for row in connection.execute(
                sa.select(t.c.id).where(
                    t.c.status.in_(DEFAULT_STATUSES),
                    sa.func.coalesce(t.c.processed_at, t.c.updated_at) < cutoff,
                )
            )
        }
    assert 0 < len(eligible) < len(everything)
    root = tmp_path / "archive"

    crashed = subprocess.run(
        [
            sys.executable,
            "-m",
            "tablequeue.pipeline",
            "archive",
            "jobs",
            "--db",
            db_url,
            "--to",
            str(root),
            "--older-than",
            "1d",
            "--master",
            "local[2]",
            "--conf",
            "spark.ui.enabled=false",
        ],
        env={**os.environ, CRASH_ENV: "archive-written"},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert crashed.returncode == CRASH_EXIT_CODE, crashed.stderr[-6000:]
    journal = Journal(spark, str(root), "jobs")
    crashed_runs = journal.runs(WRITTEN)
    assert len(crashed_runs) == 1
    assert table_ids(queue) == everything, "the crash came before any delete"
    assert sorted(archived_ids(spark, root)) == sorted(eligible)

    # And a run that died while writing: its partial files must go, its rows are in the table.
    journal.mark("r0-died-writing", STARTED)
    partial = root / "queue=jobs" / "status=Processed" / "date=2026-01-01" / "run=r0-died-writing"
    spark.read.parquet(str(root)).drop("queue", "status", "date", "run").limit(5).write.parquet(
        str(partial)
    )
    assert len(archived_ids(spark, root)) == len(eligible) + 5

    result = archive_queue(spark, db_url, "jobs", str(root), timedelta(days=1))
    assert sorted(result.recovered_runs) == sorted([*crashed_runs, "r0-died-writing"])
    assert result.recovered_deleted == len(eligible)
    assert (result.archived, result.deleted) == (0, 0)
    assert journal.runs(WRITTEN) == journal.runs(STARTED) == []

    in_table = table_ids(queue)
    in_archive = archived_ids(spark, root)
    assert len(in_archive) == len(set(in_archive)), "archived twice"
    assert set(in_archive) == eligible
    assert in_table == everything - eligible
    archived = spark.read.parquet(str(root))
    assert set(archived.columns) >= {"queue", "status", "date", "run", "message", "version"}
    statuses = {row.status for row in archived.select("status").distinct().collect()}
    assert statuses == {"Processed", "Error", "Cancelled"}


def test_cli_archive_only_the_chosen_statuses(
    spark: SparkSession, sqlite_url: str, tmp_path: Path
) -> None:
    """`--status Error --status Cancelled`: old Error and Cancelled messages are archived and
    deleted; old Processed ones, finished the same days, stay in the table. `--status Leased`
    is refused with one error line."""
    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("jobs"))
        queue = database.queue("jobs")
        fill_history(queue, 200)
        t = queue.table
        cutoff = datetime.now(UTC) - timedelta(days=1)
        with database.transaction() as connection:
            old = dict(
                connection.execute(
                    sa.select(t.c.id, t.c.status).where(
                        sa.func.coalesce(t.c.processed_at, t.c.updated_at) < cutoff,
                        t.c.status.in_(DEFAULT_STATUSES),
                    )
                ).all()
            )
        everything = table_ids(queue)
    chosen = {row_id for row_id, status in old.items() if status in ("Error", "Cancelled")}
    assert chosen and any(status == "Processed" for status in old.values())
    root = tmp_path / "archive"

    def archive(*statuses: str) -> Any:
        options = [option for status in statuses for option in ("--status", status)]
        command = ["archive", "jobs", "--db", sqlite_url, "--to", str(root), "--older-than", "1d"]
        return CliRunner().invoke(pipeline, [*command, *options, "--json"])

    result = archive("Error", "Cancelled")
    assert result.exit_code == 0, result.output
    [figures] = json.loads(result.output.strip().splitlines()[-1])
    assert (figures["archived"], figures["deleted"]) == (len(chosen), len(chosen))
    archived = spark.read.parquet(str(root)).select("id", "status").collect()
    assert sorted(row.id for row in archived) == sorted(chosen)
    assert {row.status for row in archived} == {"Error", "Cancelled"}
    with connect(sqlite_url) as database:
        assert table_ids(database.queue("jobs")) == everything - chosen

    refused = archive("Processed", "Leased")
    assert refused.exit_code == 1
    assert "error: leased messages are being processed" in refused.output
    with connect(sqlite_url) as database:
        assert table_ids(database.queue("jobs")) == everything - chosen
