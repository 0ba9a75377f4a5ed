"""Retention on a queue of 1,000,000 finished messages: how long one retention round takes to
purge them in bounded batches, and how long each batch (one transaction) holds its locks.

    .venv/bin/python -m bench.retention [--rows 1000000]

The queue holds `--rows` Error messages last changed 40 days ago (past the default
`keepErrorFor: 30d`) and 10,000 Pending ones that must stay. One `Queue.purge_retained` call
runs the round, as a worker does every purge interval. Each DELETE statement is timed with
SQLAlchemy's cursor events; the table reports the round's time, rows a second, the number of
batches and the median and longest batch. Engines: PostgreSQL and SQLite (the test fixtures'
servers), each in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import sqlalchemy as sa

from bench.worker import machine
from tablequeue import Database, connect
from tablequeue.limits import PURGE_BATCH
from tablequeue.spec import QueueResource
from tests.support.postgres_server import postgres_server

ROOT = Path(__file__).resolve().parent.parent
KEPT = 10_000


def fill_postgresql(database: Database, rows: int) -> None:
    with database.engine.begin() as connection:
        connection.exec_driver_sql(
            "INSERT INTO orders (status, message, version, attempts, process_after, tracking_id,"
            " created_at, updated_at) SELECT CASE WHEN n <= %(kept)s THEN 'Pending' ELSE 'Error'"
            " END, jsonb_build_object('OrderId', 'A-' || n), 1, 1, now(), gen_random_uuid(),"
            " now() - interval '40 days', now() - interval '40 days'"
            " FROM generate_series(1, %(rows)s) AS n",
            {"rows": rows + KEPT, "kept": KEPT},
        )
        connection.exec_driver_sql("ANALYZE orders")


def fill_sqlite(database: Database, rows: int) -> None:
    old = "strftime('%Y-%m-%d %H:%M:%f000', 'now', '-40 days')"
    with database.engine.begin() as connection:
        connection.exec_driver_sql(
            "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ?) "  # noqa: S608
            "INSERT INTO orders (status, message, version, attempts, process_after, tracking_id,"
            " created_at, updated_at) SELECT CASE WHEN n <= ? THEN 'Pending' ELSE 'Error' END,"
            " json_object('OrderId', 'A-' || n), 1, 1, strftime('%Y-%m-%d %H:%M:%f000', 'now'),"
            f" lower(hex(randomblob(16))), {old}, {old} FROM s",
            (rows + KEPT, KEPT),
        )
        connection.exec_driver_sql("ANALYZE")


class DeleteTimes:
    """Wall time of each DELETE statement that deleted rows of the queue table meanwhile."""

    def __init__(self, database: Database) -> None:
        self.engine, self._started = database.engine, 0.0
        self.seconds: list[float] = []

    def __enter__(self) -> list[float]:
        sa.event.listen(self.engine, "before_cursor_execute", self._before)
        sa.event.listen(self.engine, "after_cursor_execute", self._after)
        return self.seconds

    def __exit__(self, *exc: object) -> None:
        sa.event.remove(self.engine, "before_cursor_execute", self._before)
        sa.event.remove(self.engine, "after_cursor_execute", self._after)

    def _before(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self._started = time.perf_counter()

    def _after(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        deleted = statement.lstrip().upper().startswith("DELETE FROM ORDERS") and cursor.rowcount
        if deleted:
            self.seconds.append(time.perf_counter() - self._started)


def measure(database: Database, rows: int) -> dict[str, Any]:
    queue = database.queue("orders")
    with DeleteTimes(database) as deletes:
        started = time.perf_counter()
        purged = queue.purge_retained("bench")
        seconds = time.perf_counter() - started
    assert purged is not None and purged.messages == rows, purged
    assert queue.count() == KEPT
    batches = deletes
    return {
        "purged": purged.messages,
        "seconds": seconds,
        "rows_per_second": purged.messages / seconds,
        "batches": len(batches),
        "batch_median_ms": statistics.median(batches) * 1000,
        "batch_max_ms": max(batches) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    results: dict[str, Any] = {"rows": args.rows, "batch": PURGE_BATCH, "engines": {}}
    with postgres_server() as pg, TemporaryDirectory() as folder:
        results["machine"] = machine(pg.url)
        results["load_average"] = Path("/proc/loadavg").read_text().split()[:3]
        for engine, url, fill in (
            ("postgresql", pg.url, fill_postgresql),
            ("sqlite", f"sqlite:///{folder}/retention.db", fill_sqlite),
        ):
            with connect(url) as database:
                database.apply(QueueResource.from_name("orders"))
                fill(database, args.rows)
                results["engines"][engine] = measure(database, args.rows)
                print(engine, results["engines"][engine])
        results["load_average_end"] = Path("/proc/loadavg").read_text().split()[:3]
    write(results)


def write(results: dict[str, Any]) -> None:
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    out = ROOT / "bench" / "results" / f"retention-{date}"
    out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        f"# One retention round purging {results['rows']:,} Error messages past keepErrorFor",
        "",
        f"Batches of {results['batch']:,} rows, one transaction each; {KEPT:,} Pending rows stay.",
        "",
        "| engine | round | rows/s | batches | batch median | longest batch |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for engine, r in results["engines"].items():
        lines.append(
            f"| {engine} | {r['seconds']:.1f} s | {r['rows_per_second']:,.0f} | {r['batches']} "
            f"| {r['batch_median_ms']:.0f} ms | {r['batch_max_ms']:.0f} ms |"
        )
    lines += [
        "",
        f"Load average at the start {' '.join(results['load_average'])}, at the end "
        f"{' '.join(results['load_average_end'])}: the machine's 2 cores were shared with other",
        "work during this run, so absolute times are noisy.",
        "",
    ]
    out.with_suffix(".md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
