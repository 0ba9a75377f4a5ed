"""The workloads of bench.peers (issue 6), run against any `System` of bench/systems/: the
consumer processes they start, enqueue, drain, latency, the stats query on PostgreSQL (SQLite's:
bench/sqlite_stats.py) and bloat. Each returns one measurement as a row; bench.peers plans and
repeats them, bench.peers_report summarizes and renders them.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg

from bench.cpu import Meter, wait_until_quiet
from bench.peers_report import spread
from bench.systems.common import BODY_SQL_PG_PARAMS, Row, System, bodies
from bench.systems.pgbench_bound import Pgbench
from bench.systems.tq import TableQueue
from bench.tables import sizes
from bench.worker import ROOT, processes

PRODUCERS = 4  # latency workload: threads, each with its own connection
_runs = itertools.count()


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


def not_yet(procs: list[Any], log: Path) -> bool:
    """False (not ready yet), once `alive` found every consumer still running."""
    alive(procs, log)
    return False


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
    wait_until_quiet(system.server_pid)  # the rows before leave autovacuum running
    commands, ready, env = start(system, queue, workers, batch, tmp, None)
    log = tmp / "consumers.log"
    with consumers(commands, log, env) as procs:
        wait_until(lambda: all(r() for r in ready) or not_yet(procs, log), "ready", 120)
        time.sleep(0.5)
        system.fill(queue, n)
        meter = Meter(system.server_pid, [p.pid for p in procs])
        analyze(system, queue)
        began = time.perf_counter()
        pause = 0.1
        while True:
            time.sleep(pause)
            alive(procs, log)
            left = system.remaining(queue)
            seconds = time.perf_counter() - began
            if left == 0 or seconds > box:
                break
            pause = _next_poll(n - left, left, seconds, box)
        cpu = meter.per_message(n - left)
    system.drop(queue)
    return {"messages": n - left, "seconds": seconds, "rate": (n - left) / seconds} | cpu


def _next_poll(done: int, left: int, seconds: float, box: float) -> float:
    """Seconds until the next count of what is left: 0.1 near the end, up to 1 while the
    backlog would last longer (a count of a 200,000-row table costs the server ~20 ms: every
    0.1 s that was ~200 µs a message of server CPU in the batch-1 rows), never past the box."""
    expected = left / (done / seconds) if done else box
    return min(1.0, max(0.1, expected / 4), max(0.1, box - seconds))


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
        wait_until(lambda: all(r() for r in ready) or not_yet(procs, log), "ready", 120)
        time.sleep(1.0)
        quiet_after = wait_until_quiet(system.server_pid)
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
        "server_quiet_after_s": quiet_after,
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
    return {
        "rows": rows,
        "build_seconds": build_seconds,
        "total_size_mib": (size[0] if size else 0) / 2**20,
        "ms": time_stats(tq, queue, rows),
        "plans": plans,
    }


def time_stats(tq: TableQueue, queue: str, rows: int) -> Row:
    """`Queue.stats()` on a queue of `rows` rows, 1% of them Pending: 2 warm-ups, then 20 calls
    timed in-process (ms: median, min, max); the backlog checked; the queue dropped."""
    handle = tq.db.queue(queue)
    for _ in range(2):
        handle.stats()
    times = []
    for _ in range(20):
        began = time.perf_counter()
        stats = handle.stats()
        times.append((time.perf_counter() - began) * 1000)
    assert stats.backlog == rows // 100, stats
    tq.drop(queue)
    return spread(times)


def bloat(system: System, n: int, tmp: Path, chunk: int = 10_000) -> Row:
    """4 consumers x batch 100 drain while the parent keeps 10,000-20,000 messages waiting."""
    queue = system.create()
    commands, ready, env = start(system, queue, 4, 100, tmp, None)
    log = tmp / "consumers.log"
    snapshots: list[Row] = []
    with consumers(commands, log, env) as procs:
        wait_until(lambda: all(r() for r in ready) or not_yet(procs, log), "ready", 120)
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
