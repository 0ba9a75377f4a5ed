"""The pipeline on a real Spark standalone cluster (a master and two workers of one core on
loopback, tests/support/spark_cluster.py), run as docs/guides/pipeline.md shows: `spark-submit
--master spark://...` with two executors, against a throwaway PostgreSQL. An executor's JVM is
killed (SIGKILL) while a job runs: Spark retries its tasks on another executor, and nothing is
lost or duplicated."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from pyspark.sql import SparkSession

from tablequeue import NewMessage, connect
from tablequeue.pipeline.journal import JOURNAL_FOLDER
from tablequeue.spec import QueueResource
from tests.support.spark_cluster import SparkCluster, spark_cluster
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROWS = 40_000
QUEUE = "catalogue"
JOB_TIMEOUT = 300.0
LOST_TASK = re.compile(r"Lost task \S+ in stage \S+ .*ExecutorLostFailure")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    with spark_cluster(tmp_path_factory.mktemp("spark-cluster")) as running:
        yield running


def catalogue(rows: int) -> dict[str, dict[str, object]]:
    return {
        f"SKU-{n:06d}": {"Sku": f"SKU-{n:06d}", "Name": f"Product {n}", "Price": n % 500 + 10}
        for n in range(rows)
    }


def stored(url: str) -> dict[str, object]:
    with connect(url) as database:
        t = database.queue(QUEUE).table
        with database.transaction() as connection:
            return {
                row.message_id: json.loads(row.message)
                if isinstance(row.message, str)
                else row.message
                for row in connection.execute(sa.select(t.c.message_id, t.c.message))
            }


def count(url: str) -> int:
    with connect(url) as database:
        return database.queue(QUEUE).count()


def tail(log: Path) -> str:
    """The end of a job's output without Java's stack frames."""
    lines = log.read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith("\tat "))[-6000:]


def when_running(job: subprocess.Popen[bytes], log: Path, check: Callable[[], bool]) -> None:
    """Wait until `check()` while the job still runs (it must not have finished first)."""

    def seen() -> bool:
        if job.poll() is not None:
            raise AssertionError(f"the job ended first:\n{tail(log)}")
        return check()

    wait_until(seen, timeout=JOB_TIMEOUT, interval=0.1)


def finished(job: subprocess.Popen[bytes], log: Path) -> str:
    try:
        code = job.wait(timeout=JOB_TIMEOUT)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert code == 0, tail(log)
    return log.read_text()


def test_enqueue_survives_a_killed_executor(
    cluster: SparkCluster, postgres_url: str, tmp_path: Path
) -> None:
    """With messageIds into an idempotent queue: exactly the source's messages, whatever a lost
    task had enqueued before it died."""
    with connect(postgres_url) as database:
        database.apply(QueueResource.from_name(QUEUE, idempotent=True))
    expected = catalogue(ROWS)
    source = tmp_path / "catalogue.jsonl"
    source.write_text("".join(json.dumps(body) + "\n" for body in expected.values()))
    log = tmp_path / "enqueue.log"
    job = cluster.submit(
        2,
        *("enqueue", QUEUE, str(source), "--id-column", "Sku"),
        *("--partitions", "8", "--batch-size", "100", "--db", postgres_url),
        log=log,
    )
    try:
        when_running(job, log, lambda: 0 < count(postgres_url) < ROWS // 2)
        cluster.kill_an_executor()
    finally:
        out = finished(job, log)
    assert LOST_TASK.search(out), out[-6000:]
    assert stored(postgres_url) == expected
    totals = re.search(
        rf"^{QUEUE}: inserted ([\d,]+), updated 0, unchanged ([\d,]+), rejected 0 ", out, re.M
    )
    assert totals, out[-6000:]
    inserted, unchanged = (int(group.replace(",", "")) for group in totals.groups())
    # A lost task's counts die with it: the rows it had enqueued count as unchanged on retry.
    assert inserted + unchanged == ROWS, totals[0]


def test_archive_survives_killed_executors_then_report(
    cluster: SparkCluster, postgres_url: str, tmp_path: Path, spark: SparkSession
) -> None:
    """An executor killed while the Parquet is written, another while the rows are deleted:
    every message ends in exactly one place, once; the report, on the cluster, counts them all
    from the archive."""
    two_days_ago = datetime.now(UTC) - timedelta(days=2)
    with connect(postgres_url) as database:
        database.apply(QueueResource.from_name(QUEUE))
        queue = database.queue(QUEUE)
        queue.enqueue_many([NewMessage(message={"n": n}) for n in range(ROWS)])
        t = queue.table
        with database.transaction() as connection:
            connection.execute(
                sa.update(t).values(
                    status="Processed", processed_at=two_days_ago, updated_at=two_days_ago
                )
            )
            everything = {row.id for row in connection.execute(sa.select(t.c.id))}
    root = tmp_path / "archive"
    journal = root / JOURNAL_FOLDER / QUEUE
    log = tmp_path / "archive.log"
    job = cluster.submit(
        2,
        *("archive", QUEUE, "--to", str(root), "--older-than", "1d"),
        *("--read-partitions", "4", "--delete-batch", "50", "--db", postgres_url),
        log=log,
    )
    try:
        # Journaled, and its Parquet being written: a task attempt's folder of the commit
        # protocol (gone once the task commits).
        attempts = root / "_temporary" / "0" / "_temporary"
        when_running(
            job, log, lambda: any(journal.glob("*.started")) and any(attempts.glob("attempt_*"))
        )
        cluster.kill_an_executor()
        when_running(job, log, lambda: 0 < count(postgres_url) < ROWS)
        cluster.kill_an_executor()  # its rows are being deleted
    finally:
        out = finished(job, log)
    assert len(LOST_TASK.findall(out)) >= 2, out[-6000:]  # a write task and a delete task
    archived = [row.id for row in spark.read.parquet(str(root)).select("id").collect()]
    with connect(postgres_url) as database:
        t = database.queue(QUEUE).table
        with database.transaction() as connection:
            left = {row.id for row in connection.execute(sa.select(t.c.id))}
    assert len(archived) == len(set(archived)), "a message archived twice"
    assert set(archived).isdisjoint(left), "a message both archived and in the table"
    assert set(archived) | left == everything, "a message lost"
    assert left == set()  # nothing changed in between: all of them archived
    assert list(journal.iterdir()) == []  # no run left to finish
    assert re.search(rf"^{QUEUE}: archived {ROWS:,}, deleted {ROWS:,} in ", out, re.M), out[-6000:]

    log = tmp_path / "report.log"
    job = cluster.submit(
        2, "report", QUEUE, "--archive", str(root), "--json", "--db", postgres_url, log=log
    )
    # The log has Spark's lines too, some written after the report's (its shutdown).
    [report] = [json.loads(line) for line in finished(job, log).splitlines() if line[:1] == "{"]
    assert report["queues"][QUEUE]["counts"] == {"Processed": ROWS}
