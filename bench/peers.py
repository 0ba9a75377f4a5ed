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

This module is the command: its options, the plan of measurements and the repeats. The
workloads are in bench/peers_workloads.py, the summaries, targets and Markdown in
bench/peers_report.py, the systems in bench/systems/.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from importlib import metadata
from pathlib import Path

from bench.cpu import postmaster_pid
from bench.machine import machine
from bench.peers_report import markdown, summarize, targets
from bench.peers_workloads import bloat, drain, enqueue, latency, stats_cost
from bench.sqlite_stats import stats_cost_sqlite
from bench.systems.common import Row, System
from bench.systems.pgbench_bound import Pgbench, PgbenchDelete, pgbench_binary
from bench.systems.pgmq_peer import Pgmq
from bench.systems.pgqueuer_peer import Pgqueuer
from bench.systems.procrastinate_peer import Procrastinate
from bench.systems.tq import TableQueue, TableQueueWorker
from bench.worker import ROOT
from tests.support.mariadb_server import MariaDbServer, mariadb_server
from tests.support.postgres_server import PostgresServer, postgres_server

WORKLOADS = ("enqueue", "drain", "latency", "stats", "bloat", "sqlite", "mariadb")
PEERS = ("pgmq", "pgqueuer", "procrastinate", "asyncpg", "psycopg", "sqlalchemy")
LOAD_LIMIT = 2.5
SQLITE_STATS_MAX_ROWS = 1_000_000  # SQLite builds ~10,000 rows/s: 10,000,000 would add 15 min


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
                    partial(enqueue, s, mode, size.messages, size.one_box, size.batch_box),
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
                        partial(drain, s, workers, batch, depth, size.drain_box, tmp),
                    )
    latency_systems = [("latency", pg[name]) for name in ("worker", "pgmq", "pgqueuer")]
    latency_systems += [("latency", pg["procrastinate"]), ("sqlite", sqlite["worker"])]
    for group, s in latency_systems:
        add(
            {"workload": "latency", "group": group, "engine": s.engine, "system": s.label},
            partial(latency, s, size.rate, size.latency_seconds, tmp),
        )
    return items


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument(
        "--only",
        type=lambda text: text.split(","),
        default=[],
        help=f"comma-separated: of {', '.join(WORKLOADS)}, or systems' labels",
    )
    parser.add_argument("--repeats", type=int, help="default 3 (1 with --quick)")
    parser.add_argument(
        "--wait-for-load", type=float, default=0.0, help="wait up to this many seconds for load"
    )
    parser.add_argument("--report", type=Path, help="only rewrite the .md of a results .json")
    parser.add_argument("--note", action="append", help="with --report: add a note to the .md")
    return parser.parse_args()


def _rewrite_report(report: Path, notes: list[str] | None) -> None:
    """--report: the targets and the .md of a results .json written again."""
    document = json.loads(report.read_text())
    document["targets"] = goals = targets(document["results"])
    report.write_text(json.dumps(document, indent=1, default=str) + "\n")
    about, command = document["machine"], document["command"]
    document["notes"] = document.get("notes", []) + (notes or [])
    report.write_text(json.dumps(document, indent=1, default=str) + "\n")
    text = markdown(document["results"], about, command, goals, document["notes"])
    report.with_suffix(".md").write_text(text)


def _about(server: PostgresServer, maria: MariaDbServer, sqlite_url: str, repeats: int) -> Row:
    """The machine, the servers and the peers' versions, for the report."""
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
    return about


def _postgres_systems(url: str) -> dict[str, System]:
    return {
        "tq": TableQueue(url),
        "worker": TableQueueWorker(url),
        "pgmq": Pgmq(url),
        "pgqueuer": Pgqueuer(url),
        "procrastinate": Procrastinate(url),
        "pgbench": Pgbench(url),
        "pgbench1": PgbenchDelete(url),
    }


def _measure(items: list[tuple[Row, Callable[[], Row]]], repeats: int) -> list[Row]:
    """Each planned measurement `repeats` times, round-robin; a summary row each."""
    runs: list[list[Row]] = [[] for _ in items]
    for repeat in range(repeats):
        for (key, measure), done in zip(items, runs, strict=True):
            try:
                done.append(measure())
            except Exception as error:  # one failed measurement must not lose the run
                done.append({"error": f"{type(error).__name__}: {str(error)[:300]}"})
            print(f"[{repeat + 1}/{repeats}] {key} {done[-1]}", flush=True)
    return [summarize(key, done) for (key, _), done in zip(items, runs, strict=True)]


def _one_off(row: Row, measure: Callable[[], Row], failed: Row) -> Row:
    """A measurement made once: its row, or `failed` and the error."""
    try:
        result = row | measure()
    except Exception as error:
        result = row | failed | {"errors": [repr(error)[:300]]}
    print(result, flush=True)
    return result


def _costs(
    only: list[str], pg: dict[str, System], lite: dict[str, System], size: Sizes, tmp: Path
) -> list[Row]:
    """The statistics' cost (PostgreSQL, SQLite) and the table bloat, once each."""
    results: list[Row] = []
    if not only or "stats" in only:
        tq = pg["tq"]
        assert isinstance(tq, TableQueue)
        for rows in size.stats_rows:
            row = {"workload": "stats", "engine": "postgresql", "system": tq.label}
            results.append(_one_off(row, partial(stats_cost, tq, rows), {"rows": rows}))
    if not only or {"stats", "sqlite"} & set(only):
        lite_tq = lite["tq"]
        assert isinstance(lite_tq, TableQueue)
        for rows in (r for r in size.stats_rows if r <= SQLITE_STATS_MAX_ROWS):
            row = {"workload": "stats", "engine": "sqlite", "system": lite_tq.label}
            results.append(_one_off(row, partial(stats_cost_sqlite, lite_tq, rows), {"rows": rows}))
    if not only or "bloat" in only:
        for name in ("worker", "pgmq", "pgqueuer"):
            s = pg[name]
            key = {"workload": "bloat", "engine": "postgresql", "system": s.label}
            results.append(
                _one_off(key, partial(_bloat_runs, s, size.bloat_messages, tmp), {"runs": []})
            )
    return results


def _bloat_runs(system: System, messages: int, tmp: Path) -> Row:
    return {"runs": [bloat(system, messages, tmp)]}


def main() -> None:
    args = _arguments()
    if args.report:
        _rewrite_report(args.report, args.note)
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
        about = _about(server, maria, sqlite_url, repeats)
        pg = _postgres_systems(server.url)
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
            if not args.only or {k["group"], k["system"]} & set(args.only)
        ]
        results = _measure(items, repeats)
        results += _costs(args.only, pg, lite, size, tmp)
        for s in [*pg.values(), *lite.values(), *maria_systems.values()]:
            s.close()
        about["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
        about["sizes"] = vars(size)
    goals = targets(results)
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    suffix = ("-quick" if args.quick else "") + ("-" + "-".join(args.only) if args.only else "")
    stem = ROOT / "bench" / "results" / f"peers-{day}{suffix}"
    document = {"command": command, "machine": about, "targets": goals, "results": results}
    stem.with_suffix(".json").write_text(json.dumps(document, indent=1, default=str) + "\n")
    stem.with_suffix(".md").write_text(markdown(results, about, command, goals))
    print(f"wrote {stem}.md and .json (consumer logs in {tmp})")


if __name__ == "__main__":
    main()
