"""Issue 6's peer benchmarks: tablequeue against PGMQ, pgqueuer, procrastinate and pgbench.

    .venv/bin/python -m bench.peers [--quick] [--only WORKLOAD] [--repeats N]

Starts one throwaway PostgreSQL (tests/support/postgres_server.py: fsync, synchronous_commit and
full_page_writes off) and a SQLite file, installs every peer's schema into the same server and
runs, in one process and one run, each workload for tablequeue and each peer:

1. enqueue (`enqueue`): one message per call, and batches of 1,000 per call, from one producer;
2. drain (`drain`): consumers started on an empty queue, then N messages made visible in one
   transaction; the rate is messages finished per second until the queue is empty (or the time
   box ends); 1, 2 and 4 consumer processes, batch 1 and 100;
3. steady state (`latency`): one message per call at a fixed rate; enqueue-to-handler-start
   latency (handler start minus the moment the enqueue call returned), p50 and p99;
4. the stats query (`stats`): `Queue.stats()` on 1,000,000 and 10,000,000 rows, 1% Pending;
5. bloat (`bloat`): table and index size and dead tuples while 1,000,000 messages flow through;
workloads 1-4 for tablequeue on SQLite (`sqlite`), 1 and 2 on a throwaway MariaDB
(`mariadb`, tests/support/mariadb_server.py). Every enqueue, drain and latency row has the
client's and the server's CPU per message (bench/cpu.py). Workloads 1-3 repeat (`--repeats`,
the repeat loop outermost); 4 and 5 run once (4 times the query 20 times). Writes
bench/results/peers-<date>[-quick].{md,json}. Benchmarks only: nothing here is a test.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import psycopg

from bench.cpu import Meter, postmaster_pid
from bench.sqlite_stats import stats_cost_sqlite
from bench.systems.common import BODY_SQL_PG_PARAMS, Row, System, bodies
from bench.systems.pgbench_bound import BATCH1_MESSAGES, Pgbench, PgbenchDelete, pgbench_binary
from bench.systems.pgmq_peer import Pgmq
from bench.systems.pgqueuer_peer import Pgqueuer
from bench.systems.procrastinate_peer import Procrastinate
from bench.systems.tq import TableQueue, TableQueueWorker
from bench.worker import ROOT, processes
from tests.support.mariadb_server import mariadb_server
from tests.support.postgres_server import postgres_server

WORKLOADS = ("enqueue", "drain", "latency", "stats", "bloat", "sqlite", "mariadb")
PEERS = ("pgmq", "pgqueuer", "procrastinate", "asyncpg", "psycopg", "sqlalchemy")
LOAD_LIMIT = 2.5
SQLITE_STATS_MAX_ROWS = 1_000_000  # SQLite builds ~10,000 rows/s: 10,000,000 would add 15 min
PRODUCERS = 4  # latency workload: threads, each with its own connection
_runs = itertools.count()


class Sizes:
    def __init__(self, quick: bool) -> None:
        self.messages = 5_000 if quick else 200_000
        self.procrastinate_depth = 5_000 if quick else 20_000  # it drains ~1,000/s
        self.one_box = 3.0 if quick else 10.0  # seconds of one-at-a-time enqueue
        self.batch_box = 10.0  # seconds of batch enqueue
        self.drain_box = 4.0 if quick else 8.0
        self.rate = 500.0
        self.latency_seconds = 4.0 if quick else 20.0
        self.stats_rows = [100_000] if quick else [1_000_000, 10_000_000]
        self.bloat_messages = 50_000 if quick else 1_000_000


# --- processes ------------------------------------------------------------------------------


@contextlib.contextmanager
def consumers(commands: list[list[str]], log: Path, env: dict[str, str]) -> Iterator[list[Any]]:
    """Start the consumers; SIGTERM (then SIGKILL) them at the end. They never exit on their own."""
    env = dict(os.environ) | env | {"PYTHONPATH": str(import_path(log.parent))}
    with processes(commands, env, log, cwd=ROOT, stop_seconds=15, expect_success=False) as procs:
        yield procs


def wait_until(condition: Callable[[], bool], what: str, timeout: float) -> None:
    began = time.perf_counter()
    while not condition():
        if time.perf_counter() - began > timeout:
            raise TimeoutError(f"gave up waiting for {what}")
        time.sleep(0.02)


def import_path(tmp: Path) -> Path:
    """A folder with just `bench` and `tests` in it: the repository root itself cannot go on
    PYTHONPATH, its top-level `operator/` folder would shadow the standard library's."""
    folder = tmp / "pythonpath"
    if not folder.exists():
        folder.mkdir()
        for name in ("bench", "tests"):
            (folder / name).symlink_to(ROOT / name)
    return folder


def alive(procs: list[Any], log: Path) -> None:
    dead = [p.args[:4] for p in procs if p.poll() is not None]
    if dead:
        raise RuntimeError(f"consumer exited early: {dead}; see {log}")


def start(system: System, queue: str, workers: int, batch: int, tmp: Path, latency: Path | None):  # type: ignore[no-untyped-def]
    run = next(_runs)
    specs = [
        system.consumer(queue, batch, tmp / f"ready-{run}-{i}", latency) for i in range(workers)
    ]
    env = {"BENCH_LATENCY": str(latency)} if latency else {}
    return [c for c, _ in specs], [r for _, r in specs], env


# --- workloads ------------------------------------------------------------------------------


def enqueue(system: System, mode: str, n: int, box: float, batch_box: float) -> Row:
    queue = system.create()
    items = bodies(n)
    meter = Meter(system.server_pid)  # the client is this process: the calls run in it
    began = time.perf_counter()
    if mode == "one":
        done = system.enqueue_each(queue, items, began + box)
    else:
        done = system.enqueue_batches(queue, items, 1000, began + batch_box)
    seconds = time.perf_counter() - began
    cpu = meter.per_message(done)
    system.drop(queue)
    return {"messages": done, "seconds": seconds, "rate": done / seconds} | cpu


def drain(system: System, workers: int, batch: int, n: int, box: float, tmp: Path) -> Row:
    queue = system.create()
    if isinstance(system, Pgbench):
        system.fill(queue, n)
        analyze(system, queue)
        row = system.drain(queue, workers, batch, n, box, tmp)
        system.drop(queue)
        return row
    commands, ready, env = start(system, queue, workers, batch, tmp, None)
    log = tmp / "consumers.log"
    with consumers(commands, log, env) as procs:
        wait_until(lambda: all(r() for r in ready) or bool(alive(procs, log)), "ready", 120)
        time.sleep(0.5)
        system.fill(queue, n)
        meter = Meter(system.server_pid, [p.pid for p in procs])
        analyze(system, queue)
        began = time.perf_counter()
        while True:
            time.sleep(0.1)
            alive(procs, log)
            left = system.remaining(queue)
            seconds = time.perf_counter() - began
            if left == 0 or seconds > box:
                break
        cpu = meter.per_message(n - left)
    system.drop(queue)
    return {"messages": n - left, "seconds": seconds, "rate": (n - left) / seconds} | cpu


def analyze(system: System, queue: str) -> None:
    """Statistics for the freshly filled table, as autovacuum would soon gather them: without
    them PostgreSQL's plan for a lease flips between the lease index and sorting the whole
    backlog, and the rates with it. SQLite is left as tablequeue leaves it (no ANALYZE)."""
    if system.engine != "postgresql":
        return
    with psycopg.connect(system.url, autocommit=True) as conn:
        for relation in system.relations(queue):
            conn.execute(f"ANALYZE {relation}")


def latency(system: System, rate: float, duration: float, tmp: Path) -> Row:
    queue = system.create()
    starts = tmp / f"latency-{next(_runs)}.txt"
    commands, ready, env = start(system, queue, 1, 100, tmp, starts)
    log = tmp / "consumers.log"
    committed: dict[int, float] = {}
    with consumers(commands, log, env) as procs:
        wait_until(lambda: all(r() for r in ready) or bool(alive(procs, log)), "ready", 120)
        time.sleep(1.0)
        total = int(rate * duration)
        meter = Meter(system.server_pid, [p.pid for p in procs])
        producers = [type(system)(system.url) for _ in range(PRODUCERS)]
        began = time.perf_counter() + 0.1

        def produce(k: int) -> None:
            for i in range(k, total, PRODUCERS):
                time.sleep(max(0.0, began + i / rate - time.perf_counter()))
                producers[k].enqueue_each(queue, [bodies(1, i)[0] | {"Seq": i}], began + 3600)
                committed[i] = time.time()

        threads = [threading.Thread(target=produce, args=(k,)) for k in range(PRODUCERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        achieved = len(committed) / (time.perf_counter() - began)
        for producer in producers:
            producer.close()
        wait_until(lambda: system.remaining(queue) == 0, "latency queue drained", 120)
        cpu = meter.per_message(total)
        time.sleep(0.5)
    system.drop(queue)
    lines = [line.split() for line in starts.read_text().splitlines() if line.strip()]
    values = sorted(float(t) - committed[int(s)] for s, t in lines if s != "None")
    return {
        "samples": float(len(values)),
        "achieved_rate": achieved,
        "p50_ms": statistics.median(values) * 1000,
        "p99_ms": statistics.quantiles(values, n=100, method="inclusive")[98] * 1000,
    } | cpu


STATS_QUERIES = (
    "SELECT {t}.status, count(*) AS count_1 FROM {t} GROUP BY {t}.status",
    "SELECT count(*) AS count_1, min({t}.process_after) AS min_1, now() AS now_1 FROM {t} "
    "WHERE {t}.status IN ('Pending', 'Sleeping') AND {t}.process_after <= now()",
)


def stats_cost(tq: TableQueue, rows: int) -> Row:
    """Build a queue of `rows` rows (1% Pending, the rest Processed) in SQL, time stats()."""
    queue = tq.create()
    table = tq.table(queue)
    built = time.perf_counter()
    with psycopg.connect(tq.url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s"
            " AND indexname NOT LIKE '%%pkey'",
            [table],
        ).fetchall()
        for name, _ in indexes:
            conn.execute(f'DROP INDEX "{name}"')
        conn.execute(
            f"INSERT INTO {table} (status, priority, message, version, attempts, process_after,"  # noqa: S608
            " tracking_id, created_at, updated_at, processed_at)"
            " SELECT s, 0, " + BODY_SQL_PG_PARAMS + ", 1, a, at, gen_random_uuid(), at, at,"
            " CASE WHEN s = 'Processed' THEN at END FROM ("
            "  SELECT i, CASE WHEN i %% 100 = 0 THEN 'Pending' ELSE 'Processed' END AS s,"
            "  CASE WHEN i %% 100 = 0 THEN 0 ELSE 1 END AS a,"
            "  now() - (%s - i) * interval '1 ms' AS at FROM generate_series(1, %s) AS i) AS g",
            [rows, rows],
        )
        for _, definition in indexes:
            conn.execute(definition)
        conn.execute(f"VACUUM ANALYZE {table}")
        build_seconds = time.perf_counter() - built
        plans = {}
        for query in STATS_QUERIES:
            sql = query.format(t=table)
            plan = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}").fetchall()
            plans[sql] = "\n".join(line for (line,) in plan)
        size = conn.execute("SELECT pg_total_relation_size(%s::regclass)", [table]).fetchone()
    queue_handle = tq.db.queue(queue)
    for _ in range(2):
        queue_handle.stats()
    times = []
    for _ in range(20):
        began = time.perf_counter()
        stats = queue_handle.stats()
        times.append((time.perf_counter() - began) * 1000)
    assert stats.backlog == rows // 100, stats
    tq.drop(queue)
    return {
        "rows": rows,
        "build_seconds": build_seconds,
        "total_size_mib": (size[0] if size else 0) / 2**20,
        "ms": spread(times),
        "plans": plans,
    }


SIZES_SQL = """
SELECT pg_relation_size(c.oid), pg_indexes_size(c.oid), s.n_live_tup, s.n_dead_tup,
       s.autovacuum_count + s.vacuum_count
FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.oid = %s::regclass
"""


def sizes(url: str, relations: list[str]) -> Row:
    out: Row = {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        for rel in relations:
            row = conn.execute(SIZES_SQL, [rel]).fetchone()
            assert row is not None, rel
            out[rel] = {
                "table_mib": row[0] / 2**20,
                "indexes_mib": row[1] / 2**20,
                "live": row[2],
                "dead": row[3],
                "vacuums": row[4],
            }
    return out


def bloat(system: System, n: int, tmp: Path, chunk: int = 10_000) -> Row:
    """4 consumers x batch 100 drain while the parent keeps 10,000-20,000 messages waiting."""
    queue = system.create()
    commands, ready, env = start(system, queue, 4, 100, tmp, None)
    log = tmp / "consumers.log"
    snapshots: list[Row] = []
    with consumers(commands, log, env) as procs:
        wait_until(lambda: all(r() for r in ready) or bool(alive(procs, log)), "ready", 120)
        began, filled = time.perf_counter(), 0
        while filled < n:
            alive(procs, log)
            if system.remaining(queue) < chunk:
                system.fill(queue, chunk)
                filled += chunk
                if filled % (n // 10) == 0:
                    now = sizes(system.url, system.relations(queue))
                    snapshots.append({"flowed": filled} | now)
            else:
                time.sleep(0.05)
        wait_until(lambda: system.remaining(queue) == 0, "bloat queue drained", 600)
        seconds = time.perf_counter() - began
        time.sleep(2.0)  # statistics reach the cumulative views with a delay
        final = sizes(system.url, system.relations(queue))
    system.drop(queue)
    return {"messages": n, "seconds": seconds, "snapshots": snapshots, "final": final}


# --- reporting ------------------------------------------------------------------------------


def spread(values: list[float]) -> Row:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def fmt(stat: Row | None, digits: int = 0) -> str:
    if not stat:
        return "-"
    median, low, high = (stat[k] for k in ("median", "min", "max"))
    if f"{low:,.{digits}f}" == f"{high:,.{digits}f}":
        return f"{median:,.{digits}f}"
    return f"{median:,.{digits}f} ({low:,.{digits}f}-{high:,.{digits}f})"


def summarize(key: Row, runs: list[Row]) -> Row:
    good = [r for r in runs if "error" not in r]
    errors = [r["error"] for r in runs if "error" in r]
    if not good:
        return key | {"runs": runs, "errors": errors}
    fields = [f for f in good[0] if isinstance(good[0][f], float)]
    summary = key | {"runs": good} | {f: spread([r[f] for r in good]) for f in fields}
    return summary | ({"errors": errors} if errors else {})


def find(results: list[Row], **key: Any) -> Row | None:
    return next((r for r in results if all(r.get(k) == v for k, v in key.items())), None)


def median(row: Row | None, field: str = "rate") -> float | None:
    return row[field]["median"] if row and field in row else None


def targets(results: list[Row]) -> list[Row]:
    def drain_rate(system: str) -> float | None:
        key = {"workload": "drain", "engine": "postgresql", "workers": 4, "batch": 100}
        return median(find(results, system=system, **key))

    def ratio(name: str, ours: float | None, theirs: float | None, goal: float, what: str) -> Row:
        value = ours / theirs if ours and theirs else None
        met = None if value is None else value >= goal
        return {"target": name, "goal": f">= {goal:g}x {what}", "ratio": value, "met": met}

    worker = drain_rate(TableQueueWorker.label)
    # The bound of the statements: their best batch-100 rate at any client count (in this run
    # more clients were slower: see the drain table).
    bound_rates = [
        median(r)
        for r in results
        if r["workload"] == "drain" and r["system"] == Pgbench.label and r["batch"] == 100
    ]
    bound = max((b for b in bound_rates if b), default=None)
    out = [
        ratio("worker vs pgqueuer", worker, drain_rate(Pgqueuer.label), 1.5, "pgqueuer's worker"),
        ratio("worker vs PGMQ", worker, drain_rate(Pgmq.label), 1.0, "PGMQ's raw loop"),
        ratio(
            "worker vs pgbench",
            worker,
            bound,
            0.8,
            "the pgbench bound (lease + delete, batch 100, best of 1/2/4 clients)",
        ),
    ]
    batch = {
        r["system"]: median(r)
        for r in results
        if r["workload"] == "enqueue" and r["engine"] == "postgresql" and r["mode"] == "batch"
    }
    peers = {s: v for s, v in batch.items() if s != TableQueue.label and v}
    fastest = max(peers, key=lambda s: peers[s]) if peers else None
    out.append(
        ratio(
            "batch enqueue",
            batch.get(TableQueue.label),
            peers.get(fastest) if fastest else None,
            1.5,
            f"the fastest peer's batch path ({fastest})",
        )
    )
    stats = find(results, workload="stats", engine="postgresql", rows=10_000_000)
    ms = stats["ms"]["median"] if stats and "ms" in stats else None
    out.append(
        {"target": "stats query", "goal": "< 50 ms at 10,000,000 rows", "value": ms, "met": None}
        | ({"met": ms < 50} if ms is not None else {})
    )
    lat = find(results, workload="latency", system=TableQueueWorker.label)
    p99 = median(lat, "p99_ms")
    achieved = median(lat, "achieved_rate")
    goal = "p99 < 20 ms at 500 msg/s"
    if achieved is not None and achieved < 450:
        goal += f" (only {achieved:,.0f} msg/s reached: tablequeue's enqueue() is the limit)"
    out.append(
        {"target": "latency", "goal": goal, "value": p99, "met": None}
        | ({"met": p99 < 20} if p99 is not None and achieved and achieved >= 450 else {})
    )
    tq_bloat = find(results, workload="bloat", system=TableQueueWorker.label)
    run = tq_bloat["runs"][0] if tq_bloat else None
    if run and run["snapshots"]:
        first, last = run["snapshots"][0], run["final"]
        rel = next(iter(run["final"]))
        grow = (last[rel]["table_mib"] + last[rel]["indexes_mib"]) / max(
            first[rel]["table_mib"] + first[rel]["indexes_mib"], 0.01
        )
        out.append(
            {
                "target": "bloat",
                "goal": "bounded: table+indexes at the end <= 2x after 10% of the flow",
                "value": grow,
                "met": grow <= 2.0,
            }
        )
    return out


CPU_NOTE = (
    "CPU per message (user + system, /proc; bench/cpu.py): client = the system's side of the "
    "connection (here this driver process, which makes the calls), server = the database's "
    "processes (PostgreSQL's postmaster and backends, MariaDB's server; SQLite runs inside "
    "the client, so its cost is all client). The figure to compare across machines."
)


def cpu_cells(row: Row) -> str:
    return f"{fmt(row.get('client_cpu_us'))} | {fmt(row.get('server_cpu_us'))}"


def markdown(
    results: list[Row], about: Row, command: str, goals: list[Row], notes: list[str] | None = None
) -> str:
    out = [f"# Peer benchmark, {about['date']}", "", f"Command: `{command}`", ""]
    if about.get("load warning"):
        out += [f"**WARNING: {about['load warning']}**", ""]
    for note in notes or []:
        out += [f"**Note:** {note}", ""]
    out += [
        "Figures: median of the repeats, (min-max) when they differ. Only ratios from this one "
        "run count; everything shares one 2-core machine, so the systems' own processes, "
        "PostgreSQL and the benchmark driver compete for the same cores.",
        "",
        "## Targets (issue 6)",
        "",
        "| target | goal | measured | met |",
        "|---|---|--:|---|",
    ]
    for g in goals:
        value = g.get("ratio", g.get("value"))
        shown = "-" if value is None else (f"{value:.2f}x" if "ratio" in g else f"{value:.1f}")
        met = {True: "met", False: "**not met**", None: "not assessed"}[g["met"]]
        out.append(f"| {g['target']} | {g['goal']} | {shown} | {met} |")
    out += ["", "## 1. Enqueue, one producer", ""]
    out += [
        "`one`: one enqueue call per message (time-boxed: as many as fit in the box of "
        f"{about['sizes']['one_box']:g} s, at most {about['sizes']['messages']:,}); `batch`: "
        f"{about['sizes']['messages']:,} messages in calls of 1,000. Messages are ~150-byte "
        "JSON orders (bench.worker.body).",
        "",
        CPU_NOTE,
        "",
        "| database | system | mode | messages | messages/s | client CPU µs/msg | "
        "server CPU µs/msg |",
        "|---|---|---|--:|--:|--:|--:|",
    ]
    for r in (r for r in results if r["workload"] == "enqueue" and r["runs"]):
        out.append(
            f"| {r['engine']} | {r['system']} | {r['mode']} | {r['runs'][0]['messages']:,} | "
            f"{fmt(r['rate'])} | {cpu_cells(r)} |"
        )
    out += ["", "## 2. Drain with a no-op handler", ""]
    out += [
        f"Consumers start on an empty queue; then {about['sizes']['messages']:,} messages "
        "become visible in one transaction (procrastinate: "
        f"{about['sizes']['procrastinate_depth']:,}, it drains ~1,000/s); the rate is messages "
        "finished per second until the queue is empty, polled every 100 ms, or until the "
        f"{about['sizes']['drain_box']:g} s time box ends (then `messages` is what was drained). "
        "pgbench rows: the messages that left the table over pgbench's own duration "
        "(transactions / tps); it runs a fixed number of transactions, each a full batch: "
        "enough to drain the queue at batch 100, the first "
        f"{min(about['sizes']['messages'], BATCH1_MESSAGES):,} messages at batch 1. "
        "Client CPU: the consumer processes (pgbench: its process), from the fill's commit to "
        "the empty queue; server CPU: PostgreSQL's processes over the same span (the ANALYZE "
        "after the fill and the driver's count every 100 ms included, a few µs per message).",
        "",
        "| database | system | consumers | batch | messages | messages/s | client CPU µs/msg | "
        "server CPU µs/msg |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in (r for r in results if r["workload"] == "drain" and "rate" in r):
        out.append(
            f"| {r['engine']} | {r['system']} | {r['workers']} | {r['batch']} | "
            f"{int(statistics.median(x['messages'] for x in r['runs'])):,} | {fmt(r['rate'])} | "
            f"{cpu_cells(r)} |"
        )
    out += ["", "## 3. Steady state: enqueue-to-start latency", ""]
    out += [
        f"One producer enqueues one message per call at {about['sizes']['rate']:g}/s for "
        f"{about['sizes']['latency_seconds']:g} s; one consumer process (batch 100). Latency = "
        "`time.time()` when the handler starts minus `time.time()` right after the enqueue "
        "call returned. tablequeue: the worker (LISTEN/NOTIFY); PGMQ: the raw loop (10 ms sleep "
        "when empty, no notifications); pgqueuer and procrastinate: their workers (LISTEN/NOTIFY); "
        "SQLite: the worker polls (no notifications there), at most every 0.1 s. Client CPU: "
        "the consumer, idle time included; server CPU: the enqueues too.",
        "",
        "| database | system | achieved rate /s | samples | p50 ms | p99 ms | client CPU µs/msg | "
        "server CPU µs/msg |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in (r for r in results if r["workload"] == "latency" and "p99_ms" in r):
        out.append(
            f"| {r['engine']} | {r['system']} | {fmt(r['achieved_rate'])} | {fmt(r['samples'])} | "
            f"{fmt(r['p50_ms'], 1)} | {fmt(r['p99_ms'], 1)} | {cpu_cells(r)} |"
        )
    out += ["", "## 4. The stats query (`Queue.stats()`)", ""]
    out += [
        "A queue table filled in SQL (PostgreSQL: INSERT ... SELECT generate_series, indexes "
        "rebuilt, VACUUM ANALYZE; SQLite: bench/sqlite_stats.py, no ANALYZE, the size is the "
        "whole database file): 1% Pending, 99% Processed. `Queue.stats()` timed 20 times "
        "in-process after 2 warm-ups (two statements: counts per status; backlog and oldest due).",
        "",
        "| database | rows | table + indexes MiB | build s | stats() ms |",
        "|---|--:|--:|--:|--:|",
    ]
    for r in (r for r in results if r["workload"] == "stats" and "ms" in r):
        out.append(
            f"| {r['engine']} | {r['rows']:,} | {r['total_size_mib']:,.0f} | "
            f"{r['build_seconds']:.0f} | {fmt(r['ms'], 1)} |"
        )
    for r in (r for r in results if r["workload"] == "stats" and "plans" in r):
        out += ["", f"<details><summary>Plans at {r['rows']:,} rows</summary>", ""]
        out += [
            "For reference, EXPLAIN ANALYZE of a plain `GROUP BY status` count and of the "
            "backlog query (first run, cold). `Queue.stats()` itself may count differently "
            "(see tablequeue/queue.py at the commit below).",
            "",
        ]
        for sql, plan in r["plans"].items():
            out += ["```", sql, plan, "```"]
        out += ["</details>"]
    out += ["", "## 5. Bloat after messages flowed through, PostgreSQL", ""]
    out += [
        "4 consumers x batch 100 drain while the driver keeps 10,000-20,000 messages waiting "
        "(filled 10,000 at a time in one statement), default autovacuum. Sizes after 10% of "
        "the flow and at the end (queue empty, 2 s later).",
        "",
        "| system | relation | messages | seconds | MiB table+idx at 10% | at end | "
        "dead tuples at end | (auto)vacuums |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in (r for r in results if r["workload"] == "bloat" and r["runs"]):
        run = r["runs"][0]
        for rel, final in run["final"].items():
            first = run["snapshots"][0][rel] if run["snapshots"] else None
            early = f"{first['table_mib'] + first['indexes_mib']:.1f}" if first else "-"
            out.append(
                f"| {r['system']} | {rel} | {run['messages']:,} | {run['seconds']:.0f} | {early} | "
                f"{final['table_mib'] + final['indexes_mib']:.1f} | {final['dead']:,} | "
                f"{final['vacuums']} |"
            )
    failed = [r for r in results if r.get("errors")]
    if failed:
        out += ["", "## Measurements that failed", ""]
        for r in failed:
            what = {k: v for k, v in r.items() if k in ("workload", "engine", "system", "mode")}
            what |= {k: v for k, v in r.items() if k in ("workers", "batch")}
            out.append(f"- {what}: {'; '.join(sorted(set(r['errors'])))}")
    out += ["", "## Machine", ""]
    out += [f"- {k}: {v}" for k, v in about.items() if k not in ("sizes", "load warning")]
    return "\n".join(out) + "\n"


def machine(pg_url: str, sqlite_url: str) -> Row:
    """CPU, memory, OS, Python, PostgreSQL version and settings, SQLite, tablequeue commit."""
    info = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    mem = next(x for x in Path("/proc/meminfo").read_text().splitlines() if "MemTotal" in x)
    os_name = platform.platform()
    with contextlib.suppress(OSError, IndexError):
        release = Path("/etc/os-release").read_text()
        os_name = release.split('PRETTY_NAME="')[1].split('"')[0] + f", Linux {platform.release()}"
    names = ["fsync", "synchronous_commit", "full_page_writes", "shared_buffers", "work_mem"]
    names += ["max_connections", "autovacuum", "wal_level"]
    with psycopg.connect(pg_url) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        rows = conn.execute(
            "SELECT name, setting, unit FROM pg_settings WHERE name = ANY(%s) ORDER BY name",
            [names],
        ).fetchall()
    git = ["git", "-C", str(ROOT)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--", "tablequeue", "worker"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": f"{cpu}, {os.cpu_count()} cores",
        "memory": f"{int(mem.split()[1]) / 2**20:.1f} GiB",
        "os": os_name,
        "python": platform.python_version(),
        "postgresql": f"{version[0] if version else '?'}, "
        + ", ".join(f"{n}={v}{u or ''}" for n, v, u in rows)
        + " (throwaway server from tests/support/postgres_server.py, same machine)",
        "sqlite": f"{sqlite3.sqlite_version} ({sqlite_url}), tablequeue's own pragmas",
        "tablequeue": f"commit {commit.stdout.strip()}"
        + (" with uncommitted changes" if dirty else ""),
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


# --- main -----------------------------------------------------------------------------------


def plan(
    pg: dict[str, System],
    sqlite: dict[str, System],
    size: Sizes,
    tmp: Path,
    mariadb: dict[str, System],
) -> list[tuple[Row, Callable[[], Row]]]:
    items: list[tuple[Row, Callable[[], Row]]] = []

    def add(key: Row, measure: Callable[[], Row]) -> None:
        items.append((key, measure))

    engines = (("postgresql", pg), ("sqlite", sqlite), ("mariadb", mariadb))
    for engine, systems in engines:
        workload = engine if engine != "postgresql" else "enqueue"
        for name in ("tq", "pgmq", "pgqueuer", "procrastinate"):
            if name not in systems:
                continue
            s = systems[name]
            for mode in ("one", "batch"):
                key = {"workload": "enqueue", "group": workload, "engine": engine}
                add(
                    key | {"system": s.label, "mode": mode},
                    lambda s=s, mode=mode: enqueue(
                        s, mode, size.messages, size.one_box, size.batch_box
                    ),
                )
    for engine, systems in engines:
        workload = engine if engine != "postgresql" else "drain"
        names = ("tq", "worker", "pgmq", "pgqueuer", "procrastinate", "pgbench", "pgbench1")
        for name in names:
            if name not in systems:
                continue
            s = systems[name]
            depth = size.procrastinate_depth if name == "procrastinate" else size.messages
            for batch in s.batches:
                for workers in (1, 2, 4):
                    key = {"workload": "drain", "group": workload, "engine": engine}
                    add(
                        key | {"system": s.label, "workers": workers, "batch": batch},
                        lambda s=s, w=workers, b=batch, d=depth: drain(
                            s, w, b, d, size.drain_box, tmp
                        ),
                    )
    latency_systems = [("latency", pg[name]) for name in ("worker", "pgmq", "pgqueuer")]
    latency_systems += [("latency", pg["procrastinate"]), ("sqlite", sqlite["worker"])]
    for group, s in latency_systems:
        add(
            {"workload": "latency", "group": group, "engine": s.engine, "system": s.label},
            lambda s=s: latency(s, size.rate, size.latency_seconds, tmp),
        )
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--only", help=f"one of {', '.join(WORKLOADS)}, or a system's label")
    parser.add_argument("--repeats", type=int, help="default 3 (1 with --quick)")
    parser.add_argument(
        "--wait-for-load", type=float, default=0.0, help="wait up to this many seconds for load"
    )
    parser.add_argument("--report", type=Path, help="only rewrite the .md of a results .json")
    parser.add_argument("--note", action="append", help="with --report: add a note to the .md")
    args = parser.parse_args()
    if args.report:
        document = json.loads(args.report.read_text())
        document["targets"] = goals = targets(document["results"])
        args.report.write_text(json.dumps(document, indent=1, default=str) + "\n")
        about, command = document["machine"], document["command"]
        document["notes"] = document.get("notes", []) + (args.note or [])
        args.report.write_text(json.dumps(document, indent=1, default=str) + "\n")
        text = markdown(document["results"], about, command, goals, document["notes"])
        args.report.with_suffix(".md").write_text(text)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server on the way out
    repeats = args.repeats or (1 if args.quick else 3)
    size = Sizes(args.quick)
    command = " ".join([".venv/bin/python -m bench.peers", *sys.argv[1:]])
    waited = time.monotonic()
    while os.getloadavg()[0] >= LOAD_LIMIT and time.monotonic() - waited < args.wait_for_load:
        time.sleep(15)
    tmp = Path(tempfile.mkdtemp(prefix="tablequeue-peers-"))
    with postgres_server() as server, mariadb_server() as maria:
        sqlite_url = f"sqlite:///{tmp / 'bench.db'}"
        maria_url = maria.create_database("bench")
        about = machine(server.url, sqlite_url)
        about["mariadb"] = (
            f"{maria.version()} (throwaway server from tests/support/mariadb_server.py, same "
            "machine: no binary log, innodb_flush_log_at_trx_commit=0, no doublewrite), PyMySQL"
        )
        load = os.getloadavg()[0]
        if load >= LOAD_LIMIT:
            about["load warning"] = (
                f"1-minute load average {load:.2f} at the start (>= {LOAD_LIMIT}): other work "
                "shared the 2 cores; absolute figures are low and noisy, ratios less so"
            )
        about["pgbench"] = subprocess.run(
            [pgbench_binary(), "--version"], capture_output=True, text=True
        ).stdout.strip()
        about["peers"] = ", ".join(f"{p} {metadata.version(p)}" for p in PEERS)
        about["repeats"] = repeats
        pg: dict[str, System] = {
            "tq": TableQueue(server.url),
            "worker": TableQueueWorker(server.url),
            "pgmq": Pgmq(server.url),
            "pgqueuer": Pgqueuer(server.url),
            "procrastinate": Procrastinate(server.url),
            "pgbench": Pgbench(server.url),
            "pgbench1": PgbenchDelete(server.url),
        }
        lite: dict[str, System] = {
            "tq": TableQueue(sqlite_url),
            "worker": TableQueueWorker(sqlite_url),
        }
        maria_systems: dict[str, System] = {
            "tq": TableQueue(maria_url),
            "worker": TableQueueWorker(maria_url),
        }
        for s in pg.values():
            s.server_pid = postmaster_pid(server.data)
        for s in maria_systems.values():
            s.server_pid = int((maria.base / "mariadb.pid").read_text().split()[0])
        items = [
            (k, m)
            for k, m in plan(pg, lite, size, tmp, maria_systems)
            if not args.only or args.only in (k["group"], k["system"])
        ]
        runs: list[list[Row]] = [[] for _ in items]
        for repeat in range(repeats):
            for (key, measure), done in zip(items, runs, strict=True):
                try:
                    done.append(measure())
                except Exception as error:  # one failed measurement must not lose the run
                    done.append({"error": f"{type(error).__name__}: {str(error)[:300]}"})
                print(f"[{repeat + 1}/{repeats}] {key} {done[-1]}", flush=True)
        results = [summarize(key, done) for (key, _), done in zip(items, runs, strict=True)]
        if not args.only or args.only == "stats":
            tq = pg["tq"]
            assert isinstance(tq, TableQueue)
            for rows in size.stats_rows:
                row = {"workload": "stats", "engine": "postgresql", "system": tq.label}
                try:
                    results.append(row | stats_cost(tq, rows))
                except Exception as error:
                    results.append(row | {"rows": rows, "errors": [repr(error)[:300]]})
                print(results[-1], flush=True)
        if not args.only or args.only in ("stats", "sqlite"):
            lite_tq = lite["tq"]
            assert isinstance(lite_tq, TableQueue)
            for rows in (r for r in size.stats_rows if r <= SQLITE_STATS_MAX_ROWS):
                row = {"workload": "stats", "engine": "sqlite", "system": lite_tq.label}
                try:
                    results.append(row | stats_cost_sqlite(lite_tq, rows))
                except Exception as error:
                    results.append(row | {"rows": rows, "errors": [repr(error)[:300]]})
                print(results[-1], flush=True)
        if not args.only or args.only == "bloat":
            for name in ("worker", "pgmq", "pgqueuer"):
                s = pg[name]
                key = {"workload": "bloat", "engine": "postgresql", "system": s.label}
                try:
                    results.append(key | {"runs": [bloat(s, size.bloat_messages, tmp)]})
                except Exception as error:
                    results.append(key | {"runs": [], "errors": [repr(error)[:300]]})
                print(results[-1], flush=True)
        for s in [*pg.values(), *lite.values(), *maria_systems.values()]:
            s.close()
        about["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
        about["sizes"] = vars(size)
    goals = targets(results)
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    suffix = ("-quick" if args.quick else "") + (f"-{args.only}" if args.only else "")
    stem = ROOT / "bench" / "results" / f"peers-{day}{suffix}"
    document = {"command": command, "machine": about, "targets": goals, "results": results}
    stem.with_suffix(".json").write_text(json.dumps(document, indent=1, default=str) + "\n")
    stem.with_suffix(".md").write_text(markdown(results, about, command, goals))
    print(f"wrote {stem}.md and .json (consumer logs in {tmp})")


if __name__ == "__main__":
    main()
