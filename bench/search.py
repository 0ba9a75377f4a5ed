"""Searching a queue of 1,000,000 messages by error text and by time ranges (PostgreSQL, SQLite,
MariaDB).

    .venv/bin/python -m bench.search [--rows 1000000] [--repeats 5]

Rows: 97% Processed, 1% Pending, 1% Error, 1% OnHold, created one every 8.64 s over the last
100 days in id order (`--rows` 1,000,000), updated up to a day later (not in id order). Every
Error message's last error is a `TimeoutError` line; one message in 1,000 (Processed, retried
once) keeps a `ValueError: bad sku` line. Each search is one `Queue.messages` call for the
first page of 50, newest first (as the admin UI asks); the table has the median and min-max of
`--repeats` calls after one warm-up. On PostgreSQL each search's plan is EXPLAIN ANALYZE'd.

Then the options the results are read against, each measured and undone in the same run:
an index on `created_at` (the time searches again, and what it costs 10,000 enqueues in
batches of 100), and on PostgreSQL a pg_trgm GIN index on `last_error` (the error searches
again), when the extension can be created.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import sqlalchemy as sa

from bench.machine import machine
from tablequeue import Database, NewMessage, connect
from tablequeue.spec import QueueResource
from tests.support.mariadb_server import mariadb_server
from tests.support.postgres_server import postgres_server

ROOT = Path(__file__).resolve().parent.parent
PAGE = 50
SPAN = timedelta(days=100)
# Constant SQL of this benchmark (no input): `%` is the modulo operator.
STATUS_CASE = (
    "CASE WHEN n % 100 = 0 THEN 'Pending' WHEN n % 100 = 1 THEN 'Error' "
    "WHEN n % 100 = 2 THEN 'OnHold' ELSE 'Processed' END"
)
ERROR_CASE = (
    "CASE WHEN n % 100 = 1 THEN 'TimeoutError: upstream took too long for order A-' || n "
    "WHEN n % 1000 = 500 THEN 'ValueError: bad sku ' || (n % 977) END"
)


def fill_postgresql(database: Database, rows: int) -> None:
    step = SPAN.total_seconds() / rows
    with database.engine.begin() as connection:
        connection.exec_driver_sql(
            "INSERT INTO orders (status, message, version, attempts, process_after, tracking_id,"  # noqa: S608
            " last_error, created_at, updated_at) "
            f"SELECT {STATUS_CASE.replace('%', '%%')}, jsonb_build_object('OrderId', 'A-' || n),"
            f" 1, 1, now(), gen_random_uuid(), {ERROR_CASE.replace('%', '%%')},"
            " now() - (%(rows)s - n) * %(step)s * interval '1 second',"
            " now() - (%(rows)s - n) * %(step)s * interval '1 second'"
            "  + (n::bigint * 7919 %% 86400) * interval '1 second'"
            " FROM generate_series(1, %(rows)s) AS n",
            {"rows": rows, "step": step},
        )
        connection.exec_driver_sql("ANALYZE orders")


def fill_sqlite(database: Database, rows: int) -> None:
    step = SPAN.total_seconds() / rows
    at = "strftime('%Y-%m-%d %H:%M:%f000', 'now', ((? - n) * -?) || ' seconds')"
    updated = (
        "strftime('%Y-%m-%d %H:%M:%f000', 'now', ((? - n) * -? + (n * 7919 % 86400)) || ' seconds')"
    )
    with database.engine.begin() as connection:
        connection.exec_driver_sql(
            "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ?) "  # noqa: S608
            "INSERT INTO orders (status, message, version, attempts, process_after, tracking_id,"
            " last_error, created_at, updated_at) "
            f"SELECT {STATUS_CASE}, json_object('OrderId', 'A-' || n), 1, 1,"
            " strftime('%Y-%m-%d %H:%M:%f000', 'now'), lower(hex(randomblob(16))),"
            f" {ERROR_CASE}, {at}, {updated} FROM s",
            (rows, rows, step, rows, step),
        )
        connection.exec_driver_sql("ANALYZE")


def fill_mariadb(database: Database, rows: int) -> None:
    step_us = int(SPAN.total_seconds() * 1_000_000 / rows)
    status = STATUS_CASE.replace("n % 100", "MOD(seq, 100)")
    error = (
        "CASE WHEN MOD(seq, 100) = 1 THEN CONCAT('TimeoutError: upstream took too long for order"
        " A-', seq) WHEN MOD(seq, 1000) = 500 THEN CONCAT('ValueError: bad sku ', MOD(seq, 977))"
        " END"
    )
    created = "UTC_TIMESTAMP(6) - INTERVAL ((%(rows)s - seq) * %(step)s) MICROSECOND"
    with database.engine.begin() as connection:
        connection.exec_driver_sql(
            "INSERT INTO orders (status, message, version, attempts, process_after, tracking_id,"  # noqa: S608
            " last_error, created_at, updated_at) "
            f"SELECT {status}, JSON_OBJECT('OrderId', CONCAT('A-', seq)), 1, 1,"
            f" UTC_TIMESTAMP(6), REPLACE(UUID(), '-', ''), {error}, {created},"
            f" {created} + INTERVAL MOD(seq * 7919, 86400) SECOND"
            f" FROM seq_1_to_{int(rows)}",
            {"rows": rows, "step": step_us},
        )
        connection.exec_driver_sql("ANALYZE TABLE orders")


def searches(now: datetime) -> dict[str, dict[str, Any]]:
    """Name -> keywords of Queue.messages; the last one of each kind finds nothing."""
    day = timedelta(days=1)
    return {
        'error contains "timeout" (1% of rows)': {"error_contains": "timeout"},
        'error contains "bad sku 5" (0.01%)': {"error_contains": "bad sku 5"},
        'status Error, error contains "no such text" (no hit)': {
            "status": "Error",
            "error_contains": "no such text",
        },
        'error contains "no such text" (no hit: whole table)': {"error_contains": "no such text"},
        "created in the last hour": {"created_after": now - timedelta(hours=1)},
        "created on day 50 of 100": {
            "created_after": now - 50 * day,
            "created_before": now - 49 * day,
        },
        "created before day 10 of 100 (the oldest tenth)": {"created_before": now - 90 * day},
        "updated on day 50 of 100": {
            "updated_after": now - 50 * day,
            "updated_before": now - 49 * day,
        },
        "status Error, created on day 50 of 100": {
            "status": "Error",
            "created_after": now - 50 * day,
            "created_before": now - 49 * day,
        },
        "created in the future (no hit: whole table)": {"created_after": now + day},
    }


TIME_SEARCHES = [
    "created in the last hour",
    "created on day 50 of 100",
    "created before day 10 of 100 (the oldest tenth)",
    "status Error, created on day 50 of 100",
    "created in the future (no hit: whole table)",
]
ERROR_SEARCHES = [
    'error contains "timeout" (1% of rows)',
    'error contains "bad sku 5" (0.01%)',
    'error contains "no such text" (no hit: whole table)',
]


class LastStatement:
    """The last SELECT on the queue table (its SQL and parameters), for EXPLAIN."""

    def __init__(self, database: Database) -> None:
        self.engine = database.engine
        self.sql: str = ""
        self.parameters: Any = None

    @contextmanager
    def watching(self) -> Iterator[LastStatement]:
        sa.event.listen(self.engine, "before_cursor_execute", self._seen)
        try:
            yield self
        finally:
            sa.event.remove(self.engine, "before_cursor_execute", self._seen)

    def _seen(self, conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        if "FROM orders" in statement and statement.lstrip().upper().startswith("SELECT"):
            self.sql, self.parameters = statement, parameters


def timed(call: Callable[[], Any], repeats: int) -> dict[str, Any]:
    found = call()  # warm-up
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return {
        "found": len(found),
        "median_ms": statistics.median(seconds) * 1000,
        "min_ms": min(seconds) * 1000,
        "max_ms": max(seconds) * 1000,
    }


def run_searches(
    database: Database, names: list[str], now: datetime, repeats: int, explain: bool
) -> dict[str, Any]:
    queue = database.queue("orders")
    results: dict[str, Any] = {}
    last = LastStatement(database)
    for name, keywords in searches(now).items():
        if name not in names:
            continue
        with last.watching():
            result = timed(
                functools.partial(queue.messages, limit=PAGE, order="desc", **keywords), repeats
            )
        if explain:
            with database.engine.begin() as connection:
                plan = connection.exec_driver_sql(
                    "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + last.sql, last.parameters
                )
                result["plan"] = [row[0] for row in plan]
        elif database.dialect.name == "sqlite":
            with database.engine.begin() as connection:
                plan = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + last.sql, last.parameters)
                result["plan"] = [row[-1] for row in plan]
        results[name] = result
        print(database.dialect.name, name, {k: v for k, v in result.items() if k != "plan"})
    return results


def enqueue_seconds(database: Database) -> float:
    """10,000 enqueues in batches of 100 (each batch one transaction)."""
    queue = database.queue("orders")
    started = time.perf_counter()
    for batch in range(100):
        queue.enqueue_many([NewMessage(message={"OrderId": f"B-{batch}-{n}"}) for n in range(100)])
    return time.perf_counter() - started


def with_index(database: Database, create: str) -> float:
    """Seconds to build the index (then ANALYZE on PostgreSQL)."""
    started = time.perf_counter()
    with database.engine.begin() as connection:
        connection.exec_driver_sql(create)
        if database.dialect.name == "postgresql":
            connection.exec_driver_sql("ANALYZE orders")
    return time.perf_counter() - started


def measure(database: Database, repeats: int) -> dict[str, Any]:
    engine = database.dialect.name
    explain = engine == "postgresql"
    now = datetime.now(UTC)
    every = list(searches(now))
    out: dict[str, Any] = {"searches": run_searches(database, every, now, repeats, explain)}
    out["created_index_build_s"] = with_index(
        database, "CREATE INDEX orders_created ON orders (created_at)"
    )
    out["with_created_index"] = run_searches(database, TIME_SEARCHES, now, repeats, explain)
    out["enqueue_10k_with_created_index_s"] = enqueue_seconds(database)
    on_table = " ON orders" if engine == "mariadb" else ""
    with database.engine.begin() as connection:
        connection.exec_driver_sql("DROP INDEX orders_created" + on_table)
    out["enqueue_10k_s"] = enqueue_seconds(database)
    if engine == "postgresql":
        out["trigram"] = trigram(database, now, repeats)
    return out


def trigram(database: Database, now: datetime, repeats: int) -> dict[str, Any]:
    try:
        with database.engine.begin() as connection:
            connection.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except sa.exc.DBAPIError as error:
        return {"unavailable": str(error.orig).splitlines()[0]}
    built = with_index(
        database, "CREATE INDEX orders_error_trgm ON orders USING gin (last_error gin_trgm_ops)"
    )
    result = {
        "build_s": built,
        "searches": run_searches(database, ERROR_SEARCHES, now, repeats, True),
        "enqueue_10k_s": enqueue_seconds(database),
    }
    with database.engine.begin() as connection:
        result["size"] = connection.exec_driver_sql(
            "SELECT pg_size_pretty(pg_relation_size('orders_error_trgm'))"
        ).scalar_one()
        connection.exec_driver_sql("DROP INDEX orders_error_trgm")
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, Any] = {"rows": args.rows, "repeats": args.repeats, "engines": {}}
    with postgres_server() as pg, mariadb_server() as maria, TemporaryDirectory() as folder:
        sqlite_url = f"sqlite:///{folder}/search.db"
        results["machine"] = machine(pg.url, sqlite_url) | {"mariadb": maria.version()}
        results["uptime_start"] = uptime()
        for engine, url, fill in (
            ("postgresql", pg.url, fill_postgresql),
            ("sqlite", sqlite_url, fill_sqlite),
            ("mariadb", maria.create_database("search"), fill_mariadb),
        ):
            with connect(url) as database:
                database.apply(QueueResource.from_name("orders"))
                started = time.perf_counter()
                fill(database, args.rows)
                print(engine, f"filled in {time.perf_counter() - started:.0f} s")
                results["engines"][engine] = measure(database, args.repeats)
        results["uptime_end"] = uptime()
    write(results)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()


def write(results: dict[str, Any]) -> None:
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    out = ROOT / "bench" / "results" / f"search-{date}"
    out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        f"# Searching {results['rows']:,} messages by error text and by time ranges",
        "",
        f"First page of {PAGE}, newest first, one `Queue.messages` call each: median (min-max) "
        f"of {results['repeats']} after a warm-up. Data and method: bench/search.py.",
        "",
        f"- uptime at the start: {results['uptime_start']}",
        f"- uptime at the end: {results['uptime_end']}",
        "",
        "| engine | search | found | median ms (min-max) | with an index on created_at |",
        "|---|---|--:|--:|--:|",
    ]
    for engine, r in results["engines"].items():
        indexed = r["with_created_index"]
        for name, t in r["searches"].items():
            other = f"{_ms(indexed[name])}" if name in indexed else ""
            lines.append(f"| {engine} | {name} | {t['found']} | {_ms(t)} | {other} |")
    lines += ["", "| engine | 10,000 enqueues (batches of 100) | with created_at index | build |"]
    lines += ["|---|--:|--:|--:|"]
    for engine, r in results["engines"].items():
        lines.append(
            f"| {engine} | {r['enqueue_10k_s']:.2f} s | {r['enqueue_10k_with_created_index_s']:.2f}"
            f" s | {r['created_index_build_s']:.1f} s |"
        )
    trgm = results["engines"].get("postgresql", {}).get("trigram")
    if trgm and "unavailable" not in trgm:
        lines += ["", f"PostgreSQL with a pg_trgm GIN index on last_error ({trgm['size']}, built "]
        lines[-1] += f"in {trgm['build_s']:.1f} s; 10,000 enqueues {trgm['enqueue_10k_s']:.2f} s):"
        lines += ["", "| search | found | median ms (min-max) |", "|---|--:|--:|"]
        for name, t in trgm["searches"].items():
            lines.append(f"| {name} | {t['found']} | {_ms(t)} |")
    elif trgm:
        lines += ["", f"pg_trgm: {trgm['unavailable']}"]
    lines += ["", "## PostgreSQL plans", ""]
    for name, t in results["engines"].get("postgresql", {}).get("searches", {}).items():
        lines += [f"{name}:", "", "```text", *t["plan"], "```", ""]
    lines += ["## Machine", ""]
    lines += [f"- {key}: {value}" for key, value in results["machine"].items()]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


def _ms(t: dict[str, Any]) -> str:
    return f"{t['median_ms']:.0f} ({t['min_ms']:.0f}-{t['max_ms']:.0f})"


if __name__ == "__main__":
    main()
