"""Archive with a crash between writing the Parquet and deleting the rows, then a re-run:
every message ends in exactly one place, the table or the archive, once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from pyspark.sql import SparkSession

from tablequeue import Queue
from tablequeue.pipeline.archive import CRASH_ENV, CRASH_EXIT_CODE, DEFAULT_STATUSES, archive_queue
from tablequeue.pipeline.journal import STARTED, WRITTEN, Journal

from .history import fill_history

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MESSAGES = 3000


def table_ids(queue: Queue) -> set[int]:
    t = queue.table
    with queue.database.transaction() as connection:
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
    with queue.database.transaction() as connection:
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
