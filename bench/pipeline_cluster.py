"""Bulk enqueue on a Spark standalone cluster with 1, 2 and 4 executors, into PostgreSQL.

    .venv/bin/python -m bench.pipeline_cluster [--rows 1000000] [--executors 1,2,4]

Run it from the repository root, like the other benchmarks. It starts a throwaway PostgreSQL
(tests/support/postgres_server.py) and a standalone cluster of four one-core workers on loopback
(tests/support/spark_cluster.py), writes a catalogue of `--rows` products (~100-byte JSON bodies,
a messageId each) as Parquet in 8 files, then for each executor count runs
`spark-submit --master spark://... --total-executor-cores N pipeline/__main__.py enqueue` into a
fresh idempotent queue (8 partitions, batches of 1,000, one connection per running partition).

Messages/s are rows / the job's own seconds (`enqueue --json`: from the queue check to the last
partition's commit; the JVM, executors and session start-up are apart, in "submit seconds").
Everything shares the machine's cores: Spark's JVMs, the Python workers and PostgreSQL.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.worker import machine
from tablequeue import connect
from tablequeue.pipeline.spark import session
from tablequeue.spec import QueueResource
from tests.support.postgres_server import postgres_server
from tests.support.spark_cluster import spark_cluster

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PARTITIONS = 8


def write_catalogue(rows: int, path: Path) -> None:
    from pyspark.sql import functions as F

    spark = session("local[2]", {"spark.ui.enabled": "false"}, app_name="bench-catalogue")
    spark.range(rows, numPartitions=PARTITIONS).select(
        F.format_string("SKU-%07d", F.col("id")).alias("Sku"),
        F.concat(F.lit("Product "), F.col("id").cast("string")).alias("Name"),
        ((F.col("id") % 500) + 10).alias("Price"),
        F.array(F.lit("a"), F.lit("b")).alias("Tags"),
        (F.col("id") % 97).alias("Stock"),
    ).write.parquet(str(path))
    spark.stop()


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--executors", default="1,2,4")
    args = parser.parse_args()
    rows: int = args.rows
    counts = [int(n) for n in args.executors.split(",")]
    steps: list[dict[str, Any]] = []
    with (
        postgres_server() as server,
        tempfile.TemporaryDirectory() as tmp,
        spark_cluster(Path(tmp) / "cluster", workers=max(counts)) as cluster,
    ):
        folder = Path(tmp)
        url = server.create_database("bench_pipeline_cluster")
        catalogue = folder / "catalogue.parquet"
        write_catalogue(rows, catalogue)
        for executors in counts:
            name = f"cluster-{executors}"
            with connect(url) as database:
                database.apply(QueueResource.from_name(name, idempotent=True))
            log = folder / f"{name}.log"
            before = load()
            started = time.monotonic()
            job = cluster.submit(
                executors,
                *("enqueue", name, str(catalogue), "--id-column", "Sku"),
                *("--partitions", str(PARTITIONS), "--json", "--db", url),
                log=log,
            )
            if job.wait() != 0:
                raise SystemExit(log.read_text()[-6000:])
            submit_seconds = time.monotonic() - started
            result = json.loads(log.read_text().splitlines()[-1])
            assert result["inserted"] == rows, result
            step = {
                "executors": executors,
                "rows": rows,
                "jobSeconds": round(result["seconds"], 1),
                "submitSeconds": round(submit_seconds, 1),
                "perSecond": round(rows / result["seconds"]),
                "loadBefore": before,
                "loadAfter": load(),
            }
            print(json.dumps(step), flush=True)
            steps.append(step)
        about = {key: value for key, value in machine(url).items() if key != "sqlite"}
    write_results(rows, steps, about)


def write_results(rows: int, steps: list[dict[str, Any]], about: dict[str, Any]) -> None:
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    RESULTS.mkdir(exist_ok=True)
    data = {"rows": rows, "partitions": PARTITIONS, "steps": steps, "machine": about}
    stem = f"pipeline-cluster-{day}"
    (RESULTS / f"{stem}.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"# Pipeline enqueue on a Spark standalone cluster, {rows:,} rows, PostgreSQL ({day})",
        "",
        "`python -m bench.pipeline_cluster` (see its docstring). A master and "
        f"{max(s['executors'] for s in steps)} one-core workers on loopback; "
        f"`--total-executor-cores N`, one core and 512 MB per executor, {PARTITIONS} partitions, "
        "batches of 1,000, into a fresh idempotent queue each time.",
        "",
        "| executors | rows | job seconds | messages/s | submit seconds | load before / after |",
        "|---:|---:|---:|---:|---:|---|",
    ]
    lines += [
        f"| {s['executors']} | {s['rows']:,} | {s['jobSeconds']:.1f} | {s['perSecond']:,} | "
        f"{s['submitSeconds']:.1f} | {s['loadBefore']} / {s['loadAfter']} |"
        for s in steps
    ]
    lines += [
        "",
        f"`uptime` at the end: `{uptime}`.",
        "",
        "How to read it: the machine has 2 cores, shared by every executor JVM, their Python",
        "workers, the driver and PostgreSQL (and, today, other work on the machine: the load",
        "columns say how much), so executors beyond 2 cannot add CPU: what they add is overlap of",
        "one partition's database round trips with another's work. On a real cluster each",
        "executor brings its own cores and the database becomes the bound.",
    ]
    lines += ["", "Machine:", ""]
    lines += [f"- {key}: {value}" for key, value in about.items()]
    (RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    main()
