"""Admin UI and API page times on a queue of 1,000,000 messages (PostgreSQL and SQLite).

    .venv/bin/python -m bench.ui_million [--rows 1000000] [--repeats 5] [--indexes]

With `--indexes`, only the pages with a predicate, each engine twice in the same run: before
and after `spec.indexes` (OrderId, Product.Sku, Qty as a number) is applied; the time apply took
to build them is reported too (ui-million-indexes-<date>.md).

Rows: 97% Processed, 1% Pending, 1% Error, 1% OnHold; bodies like
{"OrderId": "A-17", "Product": {"Sku": "17"}, "Qty": 3} with 1,000 distinct Skus. Each page is
fetched over real HTTP from the API process (uvicorn in a thread, as in
tests/support/api_server.py); the table reports the median and min-max of `--repeats` fetches
after one warm-up.
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

import httpx

from bench.worker import machine
from tablequeue import Database, connect
from tablequeue.spec import QueueResource
from tests.support.api_server import serve_api
from tests.support.postgres_server import postgres_server

ROOT = Path(__file__).resolve().parent.parent
# Constant SQL of this benchmark (no input): `%` is the modulo operator, doubled for psycopg.
STATUS_CASE = (
    "CASE WHEN n % 100 = 0 THEN 'Pending' WHEN n % 100 = 1 THEN 'Error' "
    "WHEN n % 100 = 2 THEN 'OnHold' ELSE 'Processed' END"
)
PAGES = {
    "queues list (/ui)": "/ui",
    "queue page, newest 50": "/ui/queues/orders",
    "queue page, status Error": "/ui/queues/orders?status=Error",
    'queue page, where Product.Sku == "123"': (
        "/ui/queues/orders?where=Product.Sku%20%3D%3D%20%22123%22"
    ),
    'queue page, where OrderId == "none" (matches nothing: full scan)': (
        "/ui/queues/orders?where=OrderId%20%3D%3D%20%22none%22"
    ),
    'API messages, where Product.Sku == "123" and Qty > 2': (
        "/queues/orders/messages?where=Product.Sku%20%3D%3D%20%22123%22%20and%20Qty%20%3E%202"
    ),
    "message page": "/ui/queues/orders/messages/{middle}",
}


def fill_postgresql(database: Database, rows: int) -> None:
    with database.engine.begin() as connection:
        connection.exec_driver_sql(
            "INSERT INTO orders (status, message, version, attempts, process_after, tracking_id,"  # noqa: S608
            " created_at, updated_at, processed_at) "
            f"SELECT {STATUS_CASE.replace('%', '%%')}, jsonb_build_object('OrderId', 'A-' || n,"
            " 'Product', jsonb_build_object('Sku', (n %% 1000)::text), 'Qty', n %% 5), 1, 1,"
            " now(), gen_random_uuid(), now(), now(), now()"
            " FROM generate_series(1, %(rows)s) AS n",
            {"rows": rows},
        )
        connection.exec_driver_sql("ANALYZE orders")


def fill_sqlite(database: Database, rows: int) -> None:
    with database.engine.begin() as connection:
        connection.exec_driver_sql(
            "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ?) "  # noqa: S608
            "INSERT INTO orders (status, message, version, attempts, process_after, tracking_id,"
            " created_at, updated_at, processed_at) "
            f"SELECT {STATUS_CASE}, json_object('OrderId', 'A-' || n, 'Product',"
            " json_object('Sku', CAST(n % 1000 AS TEXT)), 'Qty', n % 5), 1, 1,"
            " strftime('%Y-%m-%d %H:%M:%f000', 'now'), lower(hex(randomblob(16))),"
            " strftime('%Y-%m-%d %H:%M:%f000', 'now'), strftime('%Y-%m-%d %H:%M:%f000', 'now'),"
            " strftime('%Y-%m-%d %H:%M:%f000', 'now') FROM s",
            (rows,),
        )
        connection.exec_driver_sql("ANALYZE")


INDEXES = [{"path": "OrderId"}, {"path": "Product.Sku"}, {"path": "Qty", "type": "number"}]
PREDICATE_PAGES = ["queue page, newest 50"] + [page for page in PAGES if "where" in page]
"""The pages with a predicate, and the same page without one: the floor an index can reach."""


def measure(
    database: Database, repeats: int, rows: int, pages: list[str] | None = None
) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {}
    with serve_api(database) as url, httpx.Client(base_url=url, timeout=120) as client:
        for name, path in PAGES.items():
            if pages is not None and name not in pages:
                continue
            path = path.format(middle=rows // 2)
            client.get(path).raise_for_status()  # warm-up
            samples = []
            for _ in range(repeats):
                started = time.perf_counter()
                client.get(path).raise_for_status()
                samples.append((time.perf_counter() - started) * 1000)
            timings[name] = samples
    return timings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--indexes", action="store_true", help="before/after spec.indexes")
    args = parser.parse_args()
    if args.indexes:
        main_indexes(args.rows, args.repeats)
        return
    results: dict[str, Any] = {"rows": args.rows, "engines": {}}
    with postgres_server() as pg, TemporaryDirectory() as folder:
        sqlite_url = f"sqlite:///{folder}/million.db"
        results["machine"] = machine(pg.url)
        results["load_average"] = Path("/proc/loadavg").read_text().split()[:3]
        for engine, url, fill in (
            ("postgresql", pg.url, fill_postgresql),
            ("sqlite", sqlite_url, fill_sqlite),
        ):
            with connect(url) as database:
                database.apply(QueueResource.from_name("orders", keep_processed_for="forever"))
                started = time.perf_counter()
                fill(database, args.rows)
                print(f"{engine}: {args.rows} rows in {time.perf_counter() - started:.0f}s")
                results["engines"][engine] = measure(database, args.repeats, args.rows)
    write(results)


def main_indexes(rows: int, repeats: int) -> None:
    results: dict[str, Any] = {"rows": rows, "indexes": INDEXES, "engines": {}}
    with postgres_server() as pg, TemporaryDirectory() as folder:
        sqlite_url = f"sqlite:///{folder}/million.db"
        results["machine"] = machine(pg.url)
        results["load_average"] = Path("/proc/loadavg").read_text().split()[:3]
        for engine, url, fill in (
            ("postgresql", pg.url, fill_postgresql),
            ("sqlite", sqlite_url, fill_sqlite),
        ):
            with connect(url) as database:
                database.apply(QueueResource.from_name("orders", keep_processed_for="forever"))
                fill(database, rows)
                before = measure(database, repeats, rows, PREDICATE_PAGES)
                started = time.perf_counter()
                database.apply(
                    QueueResource.from_name("orders", keep_processed_for="forever", indexes=INDEXES)
                )
                built = time.perf_counter() - started
                if engine == "postgresql":
                    with database.engine.begin() as connection:
                        connection.exec_driver_sql("ANALYZE orders")
                after = measure(database, repeats, rows, PREDICATE_PAGES)
                results["engines"][engine] = {
                    "before": before,
                    "after": after,
                    "build_seconds": built,
                }
                print(f"{engine}: indexes built in {built:.1f}s")
        results["load_average_end"] = Path("/proc/loadavg").read_text().split()[:3]
    write_indexes(results)


def write_indexes(results: dict[str, Any]) -> None:
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    out = ROOT / "bench" / "results" / f"ui-million-indexes-{date}"
    out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    paths = ", ".join(f"{i['path']} ({i.get('type', 'text')})" for i in results["indexes"])
    lines = [
        f"# Predicates on {results['rows']:,} messages, before and after spec.indexes",
        "",
        f"Indexes: {paths}. Both columns come from the same run, same data, same process.",
        "",
        "| engine | page | before: median (min-max) ms | after: median (min-max) ms |",
        "|---|---|---|---|",
    ]
    for engine, result in results["engines"].items():
        for page in PREDICATE_PAGES:
            cells = []
            for phase in ("before", "after"):
                samples = result[phase][page]
                cells.append(
                    f"{statistics.median(samples):.0f} ({min(samples):.0f}-{max(samples):.0f})"
                )
            lines.append(f"| {engine} | {page} | {' | '.join(cells)} |")
    lines.append("")
    for engine, result in results["engines"].items():
        lines.append(f"- {engine}: apply built the indexes in {result['build_seconds']:.1f} s")
    lines += [
        "",
        "The machine is shared: other sessions ran tests and benchmarks on its 2 cores during",
        "this run, so absolute times are noisy; before and after were measured minutes apart.",
        "`queue page, newest 50` has no predicate: it is what the page costs anyway (queue",
        "stats, rendering), the floor a predicate page can reach.",
        f"Load average at start: {' '.join(results['load_average'])};"
        f" at the end: {' '.join(results['load_average_end'])}",
        "",
        "Machine:",
    ]
    lines += [f"- {key}: {value}" for key, value in results["machine"].items()]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def write(results: dict[str, Any]) -> None:
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    out = ROOT / "bench" / "results" / f"ui-million-{date}"
    out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        f"# Admin UI and API with {results['rows']:,} messages in one queue",
        "",
        "| page | PostgreSQL median (min-max) ms | SQLite median (min-max) ms |",
        "|---|---|---|",
    ]
    for page in PAGES:
        cells = []
        for engine in ("postgresql", "sqlite"):
            samples = results["engines"][engine][page]
            cells.append(
                f"{statistics.median(samples):.0f} ({min(samples):.0f}-{max(samples):.0f})"
            )
        lines.append(f"| {page} | {' | '.join(cells)} |")
    lines += ["", f"Load average at start: {' '.join(results['load_average'])}", "", "Machine:"]
    lines += [f"- {key}: {value}" for key, value in results["machine"].items()]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
