"""A soak (issue 16): a steady rate for N minutes through `tablequeue worker` processes woken by
LISTEN/NOTIFY on PostgreSQL, with one row of figures a minute.

    .venv/bin/python -m bench.soak                  # 30 minutes, 500 msg/s, 2 workers
    .venv/bin/python -m bench.soak --minutes 1      # a short try (written as soak-DATE-short)

Starts a throwaway PostgreSQL (tests/support/postgres_server.py) and `--workers` worker
processes (concurrency 4, batch 100, LISTEN/NOTIFY, handler bench/handlers.py:record_start,
which appends `id start-time` to a file). `--producers` threads of this process, each with its
own connection, enqueue one message per `enqueue()` call: message i is due at start + i / rate
(absolute deadlines, so a late call does not push the later ones back and drift does not
accumulate); the achieved rate is reported. Latency = the handler's start (`time.time()` in the
worker) minus `time.time()` right after the `enqueue()` call returned (committed), same clock.

Every minute: the achieved enqueue rate, p50/p99/max latency of the messages whose handler
started that minute, the backlog, each worker's RSS (VmRSS, /proc), the queue table's size
(table, indexes, total) and the other tables the workers write (tablequeue_results,
tablequeue_attempts, tablequeue_rollup, tablequeue_workers, where present), dead row versions
and vacuums (pg_stat_user_tables), CPU per message (bench/cpu.py: the workers, PostgreSQL, this
process) and the 1-minute load average. After the flow the queue drains, and the handler's
record is checked: every enqueued id started exactly once (distinct ids, duplicates, missing).
Writes bench/results/soak-<date>[-short].{md,json}. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from bench.cpu import Meter, postmaster_pid
from bench.machine import machine
from bench.tables import sizes
from bench.worker import (
    ROOT,
    body,
    environment,
    is_ready,
    processes,
    rss_mib,
    wait_until,
    worker,
)
from tablequeue import Database, Queue, connect
from tablequeue.spec import QueueResource
from tests.support.ports import free_port
from tests.support.postgres_server import postgres_server

Row = dict[str, Any]
HANDLER = "python:bench.handlers:record_start"
BATCH = 100
HISTORY = ("tablequeue_results", "tablequeue_attempts", "tablequeue_rollup", "tablequeue_workers")
"""Shared tables the workers may write besides the queue's own (reported where they exist)."""
DEFAULTS = {"minutes": 30, "rate": 500.0, "workers": 2}


class Producer:
    """`threads` threads, each with its own connection, call `enqueue()` once per message:
    message i at `began + i / rate` (perf_counter), until `total` messages."""

    def __init__(self, url: str, queue: str, rate: float, total: int, threads: int) -> None:
        self.dbs = [connect(url) for _ in range(threads)]
        self.queue, self.rate, self.total = queue, rate, total
        self.enqueued: dict[int, float] = {}  # id: time.time() right after enqueue() returned
        self.errors: list[str] = []
        self.began = time.perf_counter() + 0.5
        self.threads = [
            threading.Thread(target=self._run, args=(k, threads), daemon=True)
            for k in range(threads)
        ]
        for thread in self.threads:
            thread.start()

    def _run(self, first: int, step: int) -> None:
        queue = self.dbs[first].queue(self.queue)
        try:
            for i in range(first, self.total, step):
                delay = self.began + i / self.rate - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                if self.errors:
                    return
                message_id = queue.enqueue(body(i)).id
                self.enqueued[message_id or 0] = time.time()
        except Exception as error:  # reported by the main thread, which stops the soak
            self.errors.append(f"{type(error).__name__}: {str(error)[:300]}")

    def join(self) -> None:
        for thread in self.threads:
            thread.join()
        for db in self.dbs:
            db.close()


class Starts:
    """The handler's record (`id start-time` per handler start, every worker appending to one
    file), read as it grows: latencies of first starts, and how often each id started."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0
        self.seen: Counter[int] = Counter()
        self.early: list[tuple[int, float]] = []  # started before its enqueue's return was noted

    def read(self, enqueued: dict[int, float]) -> list[float]:
        """Seconds from enqueue to handler start of the ids that started for the first time
        since the last call (their second and later starts count as duplicates)."""
        with open(self.path, "rb") as record:
            record.seek(self.offset)
            data = record.read()
        complete = data[: data.rfind(b"\n") + 1]  # a line being written waits for the next call
        self.offset += len(complete)
        lines = self.early + [
            (int(i), float(t)) for i, t in map(str.split, complete.decode().splitlines())
        ]
        self.early, out = [], []
        for message_id, started in lines:
            if message_id not in enqueued:
                self.early.append((message_id, started))
                continue
            self.seen[message_id] += 1
            if self.seen[message_id] == 1:
                out.append(started - enqueued[message_id])
        return out

    def check(self, enqueued: dict[int, float]) -> Row:
        """Exactly once: every enqueued id started once, nothing else started."""
        return {
            "enqueued": len(enqueued),
            "distinct_started": len(self.seen),
            "duplicates": sum(n - 1 for n in self.seen.values()),
            "missing": len(enqueued.keys() - self.seen.keys()),
            "unknown": len({i for i, _ in self.early}),
        }


def latency(values: list[float]) -> Row:
    """samples, p50/p99/max in ms (None without samples)."""
    if not values:
        return {"samples": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    p99 = (
        statistics.quantiles(values, n=100, method="inclusive")[98]
        if len(values) > 1
        else values[0]
    )
    return {
        "samples": len(values),
        "p50_ms": statistics.median(values) * 1e3,
        "p99_ms": p99 * 1e3,
        "max_ms": max(values) * 1e3,
    }


def tables(url: str, queue_table: str) -> Row:
    """bench.tables.sizes of the queue table and the shared tables that exist."""
    with psycopg.connect(url, autocommit=True) as conn:
        present = [
            n for n in HISTORY if conn.execute("SELECT to_regclass(%s)", [n]).fetchone() != (None,)
        ]
    return sizes(url, [queue_table, *present])


def soak(url: str, server: int, args: argparse.Namespace, tmp: Path) -> Row:
    """Run the flow; the per-minute rows, the totals and the exactly-once check."""
    db: Database = connect(url)
    name = "soak"
    db.apply(QueueResource.from_name(name))
    queue = db.queue(name)
    table = queue.table.name
    record = tmp / "starts.txt"
    record.touch()
    starts = Starts(record)
    ports = [free_port() for _ in range(args.workers)]
    flags = ("--listen", "--log-level", "warning")
    commands = [worker(url, name, HANDLER, port, BATCH, *flags) for port in ports]
    env = environment(tmp) | {"BENCH_STARTS": str(record)}
    log = tmp / "workers.log"
    with processes(commands, env, log) as procs:
        for port, proc in zip(ports, procs, strict=True):
            wait_until(functools.partial(is_ready, port), "worker ready", proc)
        pids = [p.pid for p in procs]
        start: Row = {"rss_mib": [rss_mib(pid) for pid in pids], "tables": tables(url, table)}
        start["load_1min"] = _load()
        total = int(args.rate * args.minutes * 60)
        whole = Meter(server, pids), Meter(None)
        producer = Producer(url, name, args.rate, total, args.producers)
        rows: list[Row] = []
        everything: list[float] = []
        done_before, at = 0, producer.began
        for minute in range(1, args.minutes + 1):
            meters = Meter(server, pids), Meter(None)
            _wait_for_minute(producer.began + 60 * minute, procs, producer, log)
            done, now = len(producer.enqueued), time.perf_counter()
            values = starts.read(producer.enqueued)
            everything += values
            enqueued = done - done_before
            row: Row = {"minute": minute, "enqueued": enqueued, "rate": enqueued / (now - at)}
            row |= _observe(url, queue, pids, values, meters, enqueued)
            rows.append(row)
            done_before, at = done, now
            print(_line(row, table), flush=True)
        producer.join()
        flowed = time.perf_counter() - producer.began
        after = _drain(url, queue, procs, pids, flowed, producer.began)
        everything += starts.read(producer.enqueued)
        totals: Row = {
            "enqueued": len(producer.enqueued),
            "seconds": flowed,
            "rate": len(producer.enqueued) / flowed,
        }
        totals |= latency(everything) | _cpu(whole, len(producer.enqueued))
    db.delete_queue(name, drop_table=True)
    db.close()
    return {
        "queue_table": table,
        "start": start,
        "minutes": rows,
        "after_drain": after,
        "totals": totals,
        "exactly_once": starts.check(producer.enqueued),
    }


def _wait_for_minute(end: float, procs: list[Any], producer: Producer, log: Path) -> None:
    """Until `end` (perf_counter), checking the workers and the producer every second."""
    while time.perf_counter() < end:
        time.sleep(min(1.0, max(0.0, end - time.perf_counter())))
        _check(procs, producer, log)


def _observe(
    url: str,
    queue: Queue,
    pids: list[int],
    values: list[float],
    meters: tuple[Meter, Meter],
    enqueued: int,
) -> Row:
    """A minute's latency, backlog, memory, table sizes, CPU and load."""
    row: Row = latency(values) | {"backlog": queue.count()}
    row["rss_mib"] = [rss_mib(pid) for pid in pids]
    row["tables"] = tables(url, queue.table.name)
    return row | _cpu(meters, enqueued) | {"load_1min": _load()}


def _drain(
    url: str, queue: Queue, procs: list[Any], pids: list[int], flowed: float, began: float
) -> Row:
    """After the flow: how long the queue took to drain, memory and table sizes then."""
    wait_until(lambda: queue.count() == 0, "the queue drained", procs[0])
    drained = time.perf_counter() - began
    time.sleep(2.0)  # statistics reach pg_stat_user_tables with a delay
    after: Row = {"seconds_after_flow": drained - flowed, "rss_mib": [rss_mib(p) for p in pids]}
    after["tables"] = tables(url, queue.table.name)
    return after


def _check(procs: list[Any], producer: Producer, log: Path) -> None:
    dead = [p.args[:2] for p in procs if p.poll() is not None]
    if dead:
        raise RuntimeError(f"a worker exited during the soak: {dead}; see {log}")
    if producer.errors:
        raise RuntimeError(f"enqueue failed: {producer.errors[0]}")


def _cpu(meters: tuple[Meter, Meter], messages: int) -> Row:
    """µs per message: the workers (client), PostgreSQL (server), this process (producer)."""
    workers, own = meters[0].per_message(messages), meters[1].per_message(messages)
    return {
        "worker_cpu_us": workers.get("client_cpu_us"),
        "server_cpu_us": workers.get("server_cpu_us"),
        "producer_cpu_us": own.get("client_cpu_us"),
    }


def _load() -> float:
    return os.getloadavg()[0]


# --- report ---------------------------------------------------------------------------------


def _n(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _others(sizes_now: Row, queue_table: str) -> float:
    return float(sum(t["total_mib"] for n, t in sizes_now.items() if n != queue_table))


def _line(row: Row, queue_table: str) -> str:
    q = row["tables"][queue_table]
    return (
        f"minute {row['minute']}: {row['rate']:.1f} msg/s, p50/p99/max "
        f"{_n(row['p50_ms'], 1)}/{_n(row['p99_ms'], 1)}/{_n(row['max_ms'], 1)} ms, "
        f"RSS {'/'.join(f'{r:.1f}' for r in row['rss_mib'])} MiB, queue table "
        f"{q['total_mib']:.2f} MiB ({q['dead']} dead), load {row['load_1min']:.2f}"
    )


def markdown(report: Row) -> str:
    """The results as Markdown: the per-minute table, the totals, the check, the machine."""
    about, result, options = report["machine"], report["result"], report["options"]
    qt = result["queue_table"]
    out = [f"# Soak, {about['date']}", "", f"Command: `{report['command']}`", ""]
    out += [
        f"{options['minutes']} minutes at a steady {options['rate']:g} messages/s, "
        f"{options['producers']} producer threads calling `enqueue()` once per message (absolute "
        f"deadlines), {options['workers']} `tablequeue worker` processes (concurrency 4, batch "
        f"{BATCH}, LISTEN/NOTIFY, handler `bench.handlers:record_start`) on a throwaway "
        "PostgreSQL; the default queue spec (a processed message is deleted). Latency: the "
        "handler's start minus the moment `enqueue()` returned (committed), same clock.",
        "",
        "**The machine is shared**: other sessions' tests and benchmarks ran on the same 2 cores "
        "during the soak, so latency and rates move with their load. The 1-minute load average "
        "of every minute is in the table; read each minute's figures with it.",
        "",
    ]
    t, s, a, once = result["totals"], result["start"], result["after_drain"], result["exactly_once"]
    end = result["minutes"][-1] if result["minutes"] else a
    loads = [r["load_1min"] for r in result["minutes"]]
    out += ["## Totals", ""]
    out += [
        f"- messages: {t['enqueued']:,} enqueued in {t['seconds']:,.0f} s "
        f"({t['rate']:,.1f} msg/s achieved); the queue was empty {a['seconds_after_flow']:.1f} s "
        "after the last enqueue",
        f"- exactly once: {once['distinct_started']:,} distinct ids started, "
        f"{once['duplicates']:,} duplicates, {once['missing']:,} missing, {once['unknown']:,} "
        "unknown ids" + (" (ok)" if _once_ok(once) else " (**not exactly once**)"),
        f"- latency over the run ({t['samples']:,} messages): p50 {_n(t['p50_ms'], 1)} ms, "
        f"p99 {_n(t['p99_ms'], 1)} ms, max {_n(t['max_ms'], 1)} ms",
        f"- CPU per message over the run: workers {_n(t['worker_cpu_us'])} µs, PostgreSQL "
        f"{_n(t['server_cpu_us'])} µs, producer (this process) {_n(t['producer_cpu_us'])} µs",
    ]
    for w in range(len(s["rss_mib"])):
        first = result["minutes"][0]["rss_mib"][w] if result["minutes"] else None
        out.append(
            f"- worker {w + 1} RSS: {s['rss_mib'][w]:.1f} MiB ready and idle, {_n(first, 1)} "
            f"after minute 1, {end['rss_mib'][w]:.1f} at the end of the flow, "
            f"{a['rss_mib'][w]:.1f} after the drain"
        )
    if loads:
        out.append(
            f"- load average (1 min): {s['load_1min']:.2f} at the start, "
            f"{min(loads):.2f}-{max(loads):.2f} during the flow (median "
            f"{statistics.median(loads):.2f})"
        )
    out += ["", "Tables, MiB (table + indexes = total incl. TOAST and maps), dead row versions, "
            "vacuums (all / automatic):", ""]  # fmt: skip
    out += [
        "| table | at the start | end of the flow | after the drain | largest |",
        "|---|--:|--:|--:|--:|",
    ]
    for name in a["tables"]:
        cells = []
        for snap in (s, end, a):
            x = snap["tables"].get(name)
            cells.append(
                "-"
                if x is None
                else f"{x['table_mib']:.2f} + {x['indexes_mib']:.2f} = "
                f"{x['total_mib']:.2f}; {x['dead']:,} dead; {x['vacuums']} / {x['autovacuums']}"
            )
        largest = max(
            (r["tables"][name]["total_mib"] for r in result["minutes"] if name in r["tables"]),
            default=None,
        )
        out.append(f"| {name} | {' | '.join(cells)} | {_n(largest, 2)} |")
    out += ["", "## Every minute", ""]
    out += [
        "rate: messages enqueued that minute per second; latency: the messages whose handler "
        "started that minute; backlog: rows in the queue table at the minute's end; queue "
        f"table: `{qt}` total MiB (table + indexes), its dead row versions and vacuums (all / "
        "automatic, cumulative); other tables: the shared tables' total MiB together; CPU: µs "
        "per message enqueued that minute.",
        "",
    ]
    workers = len(s["rss_mib"])
    header = ["min", "msg/s", "p50 ms", "p99 ms", "max ms", "backlog"]
    header += [f"RSS w{w + 1} MiB" for w in range(workers)]
    header += ["queue table MiB", "dead", "vacuums", "other tables MiB", "worker CPU µs",
               "PostgreSQL CPU µs", "producer CPU µs", "load 1 min"]  # fmt: skip
    out += [f"| {' | '.join(header)} |", f"|{'|'.join('--:' for _ in header)}|"]
    for r in result["minutes"]:
        q = r["tables"][qt]
        cells = [str(r["minute"]), _n(r["rate"], 1), _n(r["p50_ms"], 1), _n(r["p99_ms"], 1)]
        cells += [_n(r["max_ms"], 1), f"{r['backlog']:,}", *(f"{x:.1f}" for x in r["rss_mib"])]
        cells += [f"{q['table_mib']:.2f} + {q['indexes_mib']:.2f}", f"{q['dead']:,}"]
        cells += [f"{q['vacuums']} / {q['autovacuums']}", f"{_others(r['tables'], qt):.2f}"]
        cells += [_n(r["worker_cpu_us"]), _n(r["server_cpu_us"]), _n(r["producer_cpu_us"])]
        cells.append(f"{r['load_1min']:.2f}")
        out.append(f"| {' | '.join(cells)} |")
    out += ["", "## Machine", ""]
    out += [f"- {k}: {v}" for k, v in about.items()]
    return "\n".join(out) + "\n"


def _once_ok(once: Row) -> bool:
    return bool(
        once["duplicates"] == once["missing"] == once["unknown"] == 0
        and once["distinct_started"] == once["enqueued"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=DEFAULTS["minutes"])
    parser.add_argument("--rate", type=float, default=DEFAULTS["rate"], help="messages/s")
    parser.add_argument("--workers", type=int, default=DEFAULTS["workers"])
    parser.add_argument("--producers", type=int, default=4, help="enqueueing threads")
    parser.add_argument("--report", type=Path, help="only rewrite the .md of a results .json")
    args = parser.parse_args()
    if args.report:
        args.report.with_suffix(".md").write_text(markdown(json.loads(args.report.read_text())))
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server on the way out
    command = " ".join([".venv/bin/python -m bench.soak", *sys.argv[1:]])
    tmp = Path(tempfile.mkdtemp(prefix="tablequeue-soak-"))
    with postgres_server() as pg:
        about = machine(pg.url)
        result = soak(pg.url, postmaster_pid(pg.data), args, tmp)
        about["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    options = {k: getattr(args, k) for k in (*DEFAULTS, "producers")}
    report = {"command": command, "options": options, "machine": about, "result": result}
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    short = any(options[k] != v for k, v in DEFAULTS.items())
    stem = ROOT / "bench" / "results" / f"soak-{day}{'-short' if short else ''}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown(report))
    print(f"wrote {stem}.md and .json (worker log in {tmp})")
    if not _once_ok(result["exactly_once"]):
        sys.exit(f"not exactly once: {result['exactly_once']}")


if __name__ == "__main__":
    main()
