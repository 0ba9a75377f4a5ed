"""Benchmarks of the worker sidecar (`tablequeue worker`): throughput, latency, idle memory.

    .venv/bin/python -m bench.worker [--quick]

Starts its own throwaway PostgreSQL (tests/support/postgres_server.py), a SQLite file and a minimal
aiohttp app, runs every workload `--repeats` times (the repeat loop outermost, so noise spreads
over all configurations) and writes bench/results/worker-<date>[-quick].{md,json}.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import random
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from tablequeue import Database, NewMessage, Queue, connect
from tablequeue.spec import QueueResource
from tests.support.ports import free_port
from tests.support.postgres_server import postgres_server

ROOT = Path(__file__).resolve().parent.parent
TABLEQUEUE = str(Path(sys.executable).with_name("tablequeue"))
PYTHON = {
    "noop_async": "python:tablequeue.examples:noop_async",
    "noop": "python:tablequeue.examples:noop",
}
ENGINES = ("postgresql", "sqlite")
CONCURRENCY = 4
TIMEOUT = 600.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
Row = dict[str, Any]
_names = itertools.count()


def body(i: int) -> dict[str, Any]:
    """A 150-byte order (as stored)."""
    return {
        "OrderId": f"A-{i:08d}",
        "Email": f"customer{i % 997}@example.com",
        "Currency": "NOK",
        "Total": 39.8,
        "Items": [{"Sku": "SKU-000123", "Qty": 2, "Price": 19.9}],
        "Note": "door",
    }


# --- processes ------------------------------------------------------------------------------


def environment(tmp: Path) -> dict[str, str]:
    """Subprocesses import `bench` through a folder holding only a link to it: the project root
    on the path would let its `operator/` package shadow the standard library's."""
    (tmp / "path").mkdir()
    (tmp / "path" / "bench").symlink_to(ROOT / "bench")
    return dict(os.environ, PYTHONPATH=str(tmp / "path"))


@contextlib.contextmanager
def processes(
    commands: list[list[str]],
    env: dict[str, str],
    log: Path,
    cwd: Path | None = None,
    stop_seconds: float = 60,
    expect_success: bool = True,
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Start the commands (stderr appended to `log`, in `cwd` or the log's folder); SIGTERM them
    at the end (SIGKILL after `stop_seconds`), and expect exit 0 unless told otherwise."""
    with open(log, "ab") as err:
        procs = [
            subprocess.Popen(
                c, cwd=cwd or log.parent, env=env, stdout=subprocess.DEVNULL, stderr=err
            )
            for c in commands
        ]
        try:
            yield procs
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(stop_seconds)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    failed = [(p.args, p.returncode) for p in procs if p.returncode != 0]
    if failed and expect_success:
        raise RuntimeError(f"{failed} failed; see {log}")


def worker(url: str, queue: str, handler: str, port: int, batch: int, *flags: str) -> list[str]:
    options = {"--db": url, "--handler": handler, "--host": "127.0.0.1",
               "--port": port, "--batch-size": batch, "--concurrency": CONCURRENCY}  # fmt: skip
    given = [str(x) for item in options.items() for x in item]
    return [TABLEQUEUE, "worker", queue, *given, *flags]


def is_ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def wait_until(condition: Callable[[], bool], what: str, proc: subprocess.Popen[bytes]) -> None:
    """Poll every 20 ms while `proc` runs."""
    start = time.perf_counter()
    while not condition():
        if proc.poll() is not None or time.perf_counter() - start > TIMEOUT:
            raise RuntimeError(f"gave up waiting for {what} (exit code {proc.returncode})")
        time.sleep(0.02)


def rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    kib = next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(kib) / 1024


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (its own threads)."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def tree_cpu_seconds(root: int) -> float:
    """CPU of a process and its children, dead children included (PostgreSQL's backends)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, IndexError, ValueError):
            children.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        with contextlib.suppress(OSError):
            total += sum(int(f) for f in _stat(pid)[11:15]) / CLOCK_TICKS
        todo += children.get(pid, [])
    return total


# --- workloads ------------------------------------------------------------------------------


class Bench:
    def __init__(self, urls: dict[str, str], postmaster: int, http: str, env: dict[str, str],
                 tmp: Path, quick: bool):  # fmt: skip
        self.urls, self.postmaster, self.env = urls, postmaster, env
        self.dbs: dict[str, Database] = {engine: connect(url) for engine, url in urls.items()}
        self.handlers = PYTHON | {"http": http}
        self.log, self.tmp = tmp / "processes.log", tmp
        small, full = (
            {"postgresql": 5_000, "sqlite": 2_000},
            {"postgresql": 20_000, "sqlite": 10_000},
        )
        self.messages = small if quick else full
        self.latency_seconds = 5.0 if quick else 20.0
        self.enqueue_rates: dict[str, list[float]] = {engine: [] for engine in ENGINES}

    def queue(self, engine: str, messages: int = 0) -> Queue:
        """A new queue holding `messages` messages (enqueue_many, 1,000 per call)."""
        db = self.dbs[engine]
        name = f"bench-{next(_names)}"
        db.apply(QueueResource.from_name(name))
        queue = db.queue(name)
        start = time.perf_counter()
        for first in range(0, messages, 1000):
            count = min(1000, messages - first)
            queue.enqueue_many([NewMessage(message=body(first + i)) for i in range(count)])
        if messages:
            self.enqueue_rates[engine].append(messages / (time.perf_counter() - start))
        return queue

    def drop(self, queue: Queue) -> None:
        assert isinstance(queue.storage, Database)  # the queue of a `connect()`
        queue.storage.delete_queue(queue.name, drop_table=True)

    def throughput(self, engine: str, handler: str, workers: int, batch: int) -> Row:
        """Seconds from starting the processes to an empty queue; start-up: to all /readyz.

        CPU per message: the workers' CPU from their /readyz to the empty queue (raw: its loop's
        own process time), and the PostgreSQL server's (all backends) over the whole run.
        """
        url, queue = self.urls[engine], self.queue(engine, self.messages[engine])
        raw_cpu = self.tmp / f"{queue.name}.cpu"
        if handler == "raw":
            ports: list[int] = []
            raw = [sys.executable, "-m", "bench.raw", url, queue.name, str(batch), str(raw_cpu)]
            commands = [raw] * workers
        else:
            ports = [free_port() for _ in range(workers)]
            commands = [worker(url, queue.name, self.handlers[handler], p, batch) for p in ports]
        start, pg_cpu = time.perf_counter(), tree_cpu_seconds(self.postmaster)
        seconds: float | None = None
        startup: float | None = None
        cpu: float | None = None
        with processes(commands, self.env, self.log) as procs:
            waiting = dict(zip(ports, procs, strict=False))
            ready_cpu: dict[int, float] = {}  # pid: CPU seconds at its /readyz
            while seconds is None or waiting:  # until drained and every worker was ready
                if any(p.poll() not in (None, 0) for p in procs):
                    break  # a process died: `processes` raises
                if time.perf_counter() - start > TIMEOUT:
                    raise TimeoutError(f"{engine} {handler} x{workers}: queue not drained")
                if seconds is None and queue.count() == 0:
                    seconds = time.perf_counter() - start
                    pg_cpu = tree_cpu_seconds(self.postmaster) - pg_cpu
                    cpu = sum(cpu_seconds(pid) - t for pid, t in ready_cpu.items())
                for port, p in list(waiting.items()):
                    if is_ready(port):
                        ready_cpu[p.pid] = cpu_seconds(p.pid)
                        del waiting[port]
                        startup = None if waiting else time.perf_counter() - start
                time.sleep(0.05)
            for p in procs if handler == "raw" else []:
                p.wait(TIMEOUT)  # it exits after its empty lease
        if handler == "raw":
            cpu = sum(float(line) for line in raw_cpu.read_text().split())
        assert seconds is not None and cpu is not None
        self.drop(queue)
        n = self.messages[engine]
        return {
            "messages": n,
            "seconds": seconds,
            "rate": n / seconds,
            "startup": startup,
            "worker_cpu_us": cpu / n * 1e6,
            "postgres_cpu_us": pg_cpu / n * 1e6 if engine == "postgresql" else None,
        }

    def latency(self, listen: bool, poll: tuple[float, float], rate: float) -> Row:
        """Enqueue one message at a time at `rate`/s; latency = handler start - enqueue return.

        The worker first idles for a random 2-3 poll maxima, so the first message lands at a
        random point of the longest poll delay; it is reported apart ("first after idle"), and
        the steady-state figures count the messages enqueued after the first one started.
        """
        queue, port = self.queue("postgresql"), free_port()
        starts = self.tmp / f"{queue.name}.starts"
        flags = ["--listen" if listen else "--no-listen", "--poll-min", str(poll[0])]
        flags += ["--poll-max", str(poll[1])]
        record = "python:bench.handlers:record_start"
        command = worker(self.urls["postgresql"], queue.name, record, port, 100, *flags)
        enqueued: dict[int, float] = {}  # id: time.time() right after the commit
        with processes([command], self.env | {"BENCH_STARTS": str(starts)}, self.log) as (p,):
            wait_until(lambda: is_ready(port), "worker ready", p)
            time.sleep(random.uniform(2, 3) * poll[1])
            begin = time.perf_counter()
            for i in range(int(rate * self.latency_seconds)):
                time.sleep(max(0.0, begin + i / rate - time.perf_counter()))
                enqueued[queue.enqueue(body(i)).id or 0] = time.time()
            wait_until(lambda: queue.count() == 0, "latency queue drained", p)
        self.drop(queue)
        started = {int(i): float(t) for i, t in map(str.split, starts.read_text().splitlines())}
        first = min(enqueued)
        steady = [started[i] - t for i, t in enqueued.items() if t > started[first]]
        return {
            "samples": len(steady),
            "p50_ms": statistics.median(steady) * 1e3,
            "p99_ms": statistics.quantiles(steady, n=100, method="inclusive")[98] * 1e3,
            "max_ms": max(steady) * 1e3,
            "first_ms": (started[first] - enqueued[first]) * 1e3,
        }

    def idle(self, engine: str, handler: str) -> Row:
        """Start-up to /readyz on an empty queue, then VmRSS after 5 s idle."""
        queue, port = self.queue(engine), free_port()
        start = time.perf_counter()
        command = worker(self.urls[engine], queue.name, self.handlers[handler], port, 100)
        with processes([command], self.env, self.log) as (proc,):
            wait_until(lambda: is_ready(port), "worker ready", proc)
            startup = time.perf_counter() - start
            time.sleep(5)
            rss = rss_mib(proc.pid)
        self.drop(queue)
        return {"startup": startup, "rss_mib": rss}


def workloads(b: Bench) -> list[tuple[Row, Callable[[], Row]]]:
    """(description, measure) pairs, in run order."""
    items: list[tuple[Row, Callable[[], Row]]] = []

    def add(kind: str, measure: Callable[..., Row], **key: Any) -> None:
        items.append(({"kind": kind} | key, lambda: measure(**key)))

    drains = [(e, h, w, 100) for e in ENGINES for h in (*PYTHON, "http") for w in (1, 2, 4)]
    drains += [("postgresql", h, w, 10) for h in ("noop_async", "http") for w in (1, 4)]
    drains += [("postgresql", "raw", w, batch) for batch in (100, 10) for w in (1, 4)]
    for engine, handler, workers, batch in drains:
        add("throughput", b.throughput, engine=engine, handler=handler, workers=workers,
            batch=batch)  # fmt: skip
    for rate in (20.0, 2.0):
        for listen, poll in ((True, (0.1, 5.0)), (False, (0.1, 5.0)), (False, (0.1, 1.0))):
            add("latency", b.latency, listen=listen, poll=poll, rate=rate)
    for engine, handler in (("postgresql", "noop_async"), ("postgresql", "http"),
                            ("sqlite", "noop_async")):  # fmt: skip
        add("idle", b.idle, engine=engine, handler=handler)
    return items


# --- reporting ------------------------------------------------------------------------------


def spread(values: list[float]) -> Row:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarize(key: Row, runs: list[Row]) -> Row:
    fields = [f for f in runs[0] if isinstance(runs[0][f], float)]
    stats = {f: spread([r[f] for r in runs if r[f] is not None]) for f in fields}
    return key | {"runs": runs} | stats


def fmt(stat: Row | None, digits: int = 0) -> str:
    if not stat:
        return "-"
    median, low, high = (stat[k] for k in ("median", "min", "max"))
    if low == high:
        return f"{median:,.{digits}f}"
    return f"{median:,.{digits}f} [{low:,.{digits}f}, {high:,.{digits}f}]"


def table(header: str, rows: list[list[str]]) -> list[str]:
    columns = header.split(" | ")
    align = ["---" if c in ("database", "handler", "wake-up") else "--:" for c in columns]
    return [f"| {header} |", f"|{'|'.join(align)}|", *(f"| {' | '.join(r)} |" for r in rows)]


def markdown(report: Row) -> str:
    machine = report["machine"]

    def of(kind: str) -> list[Row]:
        return [r for r in report["results"] if r["kind"] == kind]

    out = [f"# Worker benchmark, {machine['date']}", "", f"Command: `{report['command']}`", ""]
    out += ["Each figure: median of the repeats, [min, max] when they differ.", ""]
    out += ["## Throughput: draining pre-enqueued messages", ""]
    out += [
        f"Concurrency {CONCURRENCY} per worker. messages/s: from starting the worker processes "
        "to `queue.count() == 0` (polled every 50 ms), start-up included. start-up: until "
        "every worker's /readyz answered 200. CPU per message: the workers' from their /readyz "
        "to the empty queue, and the PostgreSQL server's over the run. `raw` is the raw-SQL "
        "bound (bench/raw.py: plain psycopg, the same lease statement, one DELETE per batch).",
        "",
    ]
    out += table(
        "database | handler | workers | batch | messages | messages/s | start-up s"
        " | worker CPU µs/msg | PostgreSQL CPU µs/msg",
        [
            [
                r["engine"],
                r["handler"],
                str(r["workers"]),
                str(r["batch"]),
                f"{r['runs'][0]['messages']:,}",
                fmt(r["rate"]),
                fmt(r.get("startup"), 2),
                fmt(r["worker_cpu_us"]),
                fmt(r.get("postgres_cpu_us")),
            ]
            for r in of("throughput")
        ],
    )
    out += ["", "Filling the queues, `enqueue_many` of 1,000 messages per call, messages/s: "]
    out[-1] += ", ".join(f"{e} {fmt(rate)}" for e, rate in report["enqueue_many"].items())
    out += ["", "## Latency: enqueue to handler start, PostgreSQL", ""]
    out += [
        "One worker (batch 100, concurrency 4), one message per `enqueue()` at a steady rate "
        "for the run; latency: `time.time()` at handler start (bench/handlers.py) minus "
        "`time.time()` right after `enqueue()` returned (committed). The worker idles for a "
        "random 2-3 times its longest poll delay first; `first after idle` is the first "
        "message's latency, the other columns count the messages enqueued after it started.",
        "",
    ]
    out += table(
        "rate /s | wake-up | poll min-max s | samples | p50 ms | p99 ms | max ms"
        " | first after idle ms",
        [
            [
                f"{r['rate']:g}",
                "LISTEN/NOTIFY" if r["listen"] else "polling",
                f"{r['poll'][0]:g}-{r['poll'][1]:g}",
                str(r["runs"][0]["samples"]),
                fmt(r["p50_ms"], 1),
                fmt(r["p99_ms"], 1),
                fmt(r["max_ms"], 1),
                fmt(r["first_ms"], 1),
            ]
            for r in of("latency")
        ],
    )
    out += ["", "## Idle worker", ""]
    out += ["start-up: process start to /readyz 200, empty queue. RSS: VmRSS after 5 s idle.", ""]
    out += table(
        "database | handler | start-up s | RSS MiB",
        [
            [r["engine"], r["handler"], fmt(r["startup"], 2), fmt(r["rss_mib"], 1)]
            for r in of("idle")
        ],
    )
    out += ["", "## Machine", ""]
    out += [f"- {k}: {v}" for k, v in machine.items()]
    return "\n".join(out) + "\n"


def machine(pg_url: str) -> Row:
    cpu = next(
        line.split(":", 1)[1].strip()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.startswith("model name")
    )
    mem = next(
        line for line in Path("/proc/meminfo").read_text().splitlines() if "MemTotal" in line
    )
    os_name = platform.platform()
    with contextlib.suppress(OSError):
        release = Path("/etc/os-release").read_text()
        os_name = release.split('PRETTY_NAME="')[1].split('"')[0] + f", Linux {platform.release()}"
    with psycopg.connect(pg_url) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        rows = conn.execute(
            "SELECT name, setting, unit FROM pg_settings WHERE name IN ('fsync', "
            "'synchronous_commit', 'full_page_writes', 'shared_buffers', 'max_connections')"
        ).fetchall()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "tablequeue", "worker"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": f"{cpu}, {os.cpu_count()} cores",
        "memory": f"{int(mem.split()[1]) / 1024 / 1024:.1f} GiB",
        "os": os_name,
        "python": platform.python_version(),
        "postgresql": f"{version[0] if version else '?'}, "
        + ", ".join(f"{n}={s}{u or ''}" for n, s, u in rows)
        + " (throwaway server from tests/support/postgres_server.py, on the same machine)",
        "sqlite": f"{sqlite3.sqlite_version}, WAL, synchronous=NORMAL, a file in /tmp",
        "tablequeue": f"commit {commit}" + (" with uncommitted changes" if dirty else ""),
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages, one repeat")
    parser.add_argument("--repeats", type=int, help="default 3 (1 with --quick)")
    parser.add_argument("--only", help="run the workloads whose description contains this")
    args = parser.parse_args()
    repeats = args.repeats or (1 if args.quick else 3)
    command = " ".join([".venv/bin/python -m bench.worker", *sys.argv[1:]])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the servers on the way out
    tmp = Path(tempfile.mkdtemp(prefix="tablequeue-bench-"))
    env, http_port = environment(tmp), free_port()
    http_app = [sys.executable, "-m", "bench.http_app", str(http_port)]
    with (
        postgres_server() as pg,
        processes([http_app], env, tmp / "http.log") as (app,),
    ):
        wait_until(lambda: _accepts(http_port), "HTTP app", app)
        urls = {"postgresql": pg.url, "sqlite": f"sqlite:///{tmp / 'bench.db'}"}
        about = machine(pg.url)
        postmaster = int((pg.data / "postmaster.pid").read_text().split()[0])
        http = f"http://127.0.0.1:{http_port}/process"
        bench = Bench(urls, postmaster, http, env, tmp, args.quick)
        items = [(k, m) for k, m in workloads(bench) if not args.only or args.only in str(k)]
        runs: list[list[Row]] = [[] for _ in items]
        for repeat in range(repeats):
            for (key, measure), done in zip(items, runs, strict=True):
                done.append(measure() | {"load_1min": os.getloadavg()[0]})
                print(f"[{repeat + 1}/{repeats}] {key} {done[-1]}", flush=True)
        about["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
        about["repeats"] = repeats
        enqueued = {engine: spread(r) for engine, r in bench.enqueue_rates.items() if r}
    results = [summarize(key, done) for (key, _), done in zip(items, runs, strict=True)]
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    suffix = ("-quick" if args.quick else "") + ("-partial" if args.only else "")
    stem = ROOT / "bench" / "results" / f"worker-{day}{suffix}"
    report = {"command": command, "machine": about, "enqueue_many": enqueued, "results": results}
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown(report))
    shutil.rmtree(tmp)  # kept when something failed: the process logs are in it
    print(f"wrote {stem}.md and {stem}.json")


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


if __name__ == "__main__":
    main()
