"""Issue 16, past one machine: hundreds of consumer connections through PgBouncer.

    .venv/bin/python -m bench.pooler [--connections 200] [--processes 4] [--messages 20000]

Starts a throwaway PostgreSQL (tests/support/postgres_server.py, max_connections=300) and
Debian's `pgbouncer` (`apt-get install -y pgbouncer`) in transaction pooling mode in front of it
(default_pool_size 20: 200 clients share 20 server connections). Then:

1. probes what transaction pooling breaks for tablequeue: its `options=-c statement_timeout=...`
   startup parameter, psycopg's automatic prepared statements, LISTEN, a session advisory lock
   taken and released in two autocommit statements (the worker's vacuum check does that);
2. drains the same filled queue with `--connections` consumer threads (`--processes` processes,
   one SQLAlchemy pool each) calling `settle_and_lease` in a loop, directly and through the
   pooler, and checks exactly-once: every message leased once, settled once, the table empty.

Writes bench/results/pooler-<date>.{md,json}. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from bench.cpu import Meter, postmaster_pid
from bench.peers_workloads import import_path
from bench.systems.tq import TableQueue
from bench.worker import ROOT, tree_cpu_seconds
from tablequeue import connect
from tablequeue.models import Completion
from tests.support.ports import free_port
from tests.support.postgres_server import PostgresServer

Row = dict[str, Any]
POOL_SIZE = 20
DEADLINE = 180.0  # seconds a consumer thread keeps going (errors can strand leased messages)


# --- the pooler -----------------------------------------------------------------------------


@contextlib.contextmanager
def pgbouncer(pg_port: int, ignore: str) -> Iterator[str]:
    """PgBouncer in transaction mode on a free port; yields its URL for database `postgres`."""
    binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    folder = Path(tempfile.mkdtemp(prefix="tablequeue-pgbouncer-"))
    port = free_port()
    (folder / "users.txt").write_text('"postgres" ""\n')
    (folder / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"postgres = host=127.0.0.1 port={pg_port} dbname=postgres\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {folder / 'users.txt'}\n"
        f"pool_mode = transaction\ndefault_pool_size = {POOL_SIZE}\nmax_client_conn = 2000\n"
        f"ignore_startup_parameters = {ignore}\n"
        f"logfile = {folder / 'pgbouncer.log'}\npidfile = {folder / 'pgbouncer.pid'}\n"
    )
    command = [binary, str(folder / "pgbouncer.ini")]
    if os.geteuid() == 0:  # pgbouncer refuses to run as root
        for path in (folder, *folder.iterdir()):
            shutil.chown(path, "postgres", "postgres")
        command = ["runuser", "-u", "postgres", "--", *command]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(url, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(folder, ignore_errors=True)


def pooler_pid(url: str) -> int | None:
    """The pgbouncer process listening on the URL's port (for its CPU)."""
    port = url.rsplit(":", 1)[1].split("/")[0]
    out = subprocess.run(["pgrep", "-f", "pgbouncer"], capture_output=True, text=True).stdout
    for pid in out.split():
        with contextlib.suppress(OSError):
            ini = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[-2].decode()
            if ini.endswith(".ini") and f"listen_port = {port}" in Path(ini).read_text():
                return int(pid)
    return None


# --- probes ---------------------------------------------------------------------------------


def first_line(error: BaseException) -> str:
    text = str(getattr(error, "orig", None) or error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def probe_timeout(url: str) -> str:
    """tablequeue's engine sends `options=-c statement_timeout=300000`: what does it get?"""
    try:
        with connect(url) as db, db.engine.connect() as connection:
            return "statement_timeout = " + str(
                connection.exec_driver_sql("SHOW statement_timeout").scalar()
            )
    except Exception as error:
        return first_line(error)


def probe_listen(url: str, direct: str) -> str:
    """LISTEN through `url`, NOTIFY directly: does the notification arrive within 5 s?"""
    with psycopg.connect(url, autocommit=True) as listener:
        listener.execute("LISTEN bench_pooler")
        with psycopg.connect(direct, autocommit=True) as sender:
            sender.execute("NOTIFY bench_pooler, 'hello'")
        got = list(listener.notifies(timeout=5.0, stop_after=1))
    return f"{len(got)} of 1 notification received within 5 s"


def probe_session_lock(url: str, direct: str, stop: threading.Event) -> str:
    """`pg_try_advisory_lock` then `pg_advisory_unlock`, two autocommit statements on one client
    connection (as `vacuum_if_bloated` does), 20 times while the consumers run; then the
    advisory locks still held on the server."""
    refused = 0
    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as conn:
        for _ in range(20):
            if stop.is_set():
                break
            conn.execute("SELECT pg_try_advisory_lock(16016)")
            row = conn.execute("SELECT pg_advisory_unlock(16016)").fetchone()
            refused += not (row and row[0])
            time.sleep(0.05)
    with psycopg.connect(direct) as conn:
        held = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 16016"
        ).fetchone()
    return f"unlock refused (another backend held it) {refused} of 20; locks left held {held}"


# --- the drain ------------------------------------------------------------------------------


def consume(url: str, queue: str, batch: int, threads: int, out: Path, go: Path) -> None:
    """One consumer process: `threads` loops of settle_and_lease on one pool of `threads`."""
    prepare = os.environ.get("BENCH_PREPARE") == "1"
    args: dict[str, Any] = {} if prepare else {"connect_args": {"prepare_threshold": None}}
    db = connect(url, pool_size=threads, max_overflow=0, **args)
    q = db.queue(queue)
    leased: list[int] = []
    settled: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    lock = threading.Lock()
    warm = threading.Barrier(threads + 1)

    def loop(i: int) -> None:
        owner = f"pool-{os.getpid()}-{i}"
        done: list[Completion] = []
        mine: list[int] = []
        with db.engine.connect() as connection:  # open this thread's connection before the go
            connection.exec_driver_sql("SELECT 1")
            connection.commit()  # through the pooler a transaction holds a server connection
            warm.wait()
        while not go.exists():
            time.sleep(0.01)
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            try:
                result, lease = q.settle_and_lease(owner, done, batch)
            except Exception as error:
                with lock:
                    errors[first_line(error)[:200]] += 1
                done = []  # in doubt: rolled back, the messages stay leased to `owner`
                continue
            with lock:
                settled.update({k: v for k, v in vars(result).items() if v})
            mine += [m.id for m in lease.messages]
            done = [Completion(m) for m in lease.messages]
            if not done:
                break
        with lock:
            leased.extend(mine)

    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    warm.wait()
    (out.with_suffix(".ready")).touch()
    for w in workers:
        w.join()
    db.close()
    out.write_text(json.dumps({"leased": leased, "settled": settled, "errors": errors}))


def drain(
    label: str,
    url: str,
    direct: str,
    server: int,
    args: argparse.Namespace,
    tmp: Path,
    prepare: bool = False,
) -> Row:
    system = TableQueue(direct)
    queue = system.create()
    system.fill(queue, args.messages)
    with psycopg.connect(direct, autocommit=True) as conn:
        conn.execute(f"ANALYZE {system.table(queue)}")
    go = tmp / f"go-{queue}"
    per = args.connections // args.processes
    outs = [tmp / f"{queue}-{i}.json" for i in range(args.processes)]
    env = dict(os.environ) | {"PYTHONPATH": str(import_path(tmp))}
    env |= {"BENCH_PREPARE": "1" if prepare else "0"}
    command = [sys.executable, "-m", "bench.pooler", "consume", url, queue, str(args.batch)]
    procs = [
        subprocess.Popen([*command, str(per), str(o), str(go)], cwd=ROOT, env=env) for o in outs
    ]
    deadline = time.monotonic() + 300
    while not all(o.with_suffix(".ready").exists() for o in outs):
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            raise RuntimeError(f"{label}: a consumer process failed to start")
        time.sleep(0.05)
    bouncer = pooler_pid(url) if url != direct else None
    bouncer_cpu = tree_cpu_seconds(bouncer) if bouncer else 0.0
    meter = Meter(server, own=False)  # the consumers exit on their own: reaped children
    stop = threading.Event()
    lock_probe: list[str] = []
    probe = threading.Thread(
        target=lambda: lock_probe.append(probe_session_lock(url, direct, stop))
    )
    began = time.perf_counter()
    go.touch()
    probe.start()
    for p in procs:
        p.wait(DEADLINE + 60)
    seconds = time.perf_counter() - began
    stop.set()
    probe.join()
    left = system.remaining(queue)
    drained = args.messages - left
    cpu = meter.per_message(max(drained, 1))
    bouncer_cpu = tree_cpu_seconds(bouncer) - bouncer_cpu if bouncer else 0.0
    results = [json.loads(o.read_text()) for o in outs]
    system.drop(queue)
    system.close()
    leased = Counter(i for r in results for i in r["leased"])
    settled: Counter[str] = sum((Counter(r["settled"]) for r in results), Counter())
    errors: Counter[str] = sum((Counter(r["errors"]) for r in results), Counter())
    return {
        "label": label,
        "connections": per * args.processes,
        "batch": args.batch,
        "messages": args.messages,
        "seconds": seconds,
        "rate": drained / seconds,
        "left_in_table": left,
        "leased_distinct": len(leased),
        "leased_twice_or_more": sum(1 for n in leased.values() if n > 1),
        "settled": dict(settled),
        "errors": dict(errors.most_common(5)),
        "error_count": sum(errors.values()),
        "session_lock_probe": lock_probe[0] if lock_probe else "-",
        "pooler_cpu_us": bouncer_cpu / max(drained, 1) * 1e6 if bouncer else None,
    } | cpu


# --- report ---------------------------------------------------------------------------------


def markdown(document: Row) -> str:
    about, runs = document["machine"], document["runs"]
    out = [
        f"# PgBouncer transaction pooling, {about['date']}",
        "",
        f"Command: `{document['command']}`",
    ]
    out += [
        "",
        f"**Loaded machine**: load average {about['load average at start']} at the start, "
        f"{about['load average at end']} at the end (2 cores shared with other work): "
        "rates are low and noisy, the CPU per message and the correctness checks are not.",
        "",
    ]
    out += ["## What transaction pooling breaks", "", "| probe | outcome |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in document["probes"].items()]
    out += ["", "## Drain: consumers calling `settle_and_lease` in a loop", ""]
    out += [
        f"{runs[0]['messages']:,} messages filled first; {runs[0]['connections']} consumer "
        f"threads in {document['processes']} processes (one SQLAlchemy pool each, one connection "
        f"per thread), batch {runs[0]['batch']}; pgbouncer `pool_mode = transaction`, "
        f"`default_pool_size = {POOL_SIZE}`. CPU µs per message: consumers, PostgreSQL (all its "
        "processes), pgbouncer.",
        "",
        "| run | messages/s | left in table | leased | leased twice | settled | errors | "
        "consumer CPU | PostgreSQL CPU | pgbouncer CPU |",
        "|---|--:|--:|--:|--:|---|---|--:|--:|--:|",
    ]
    for r in runs:
        settled = ", ".join(f"{k} {v:,}" for k, v in r["settled"].items()) or "-"
        errors = "; ".join(f"{v}x {k}" for k, v in r["errors"].items()) or "none"
        bouncer = f"{r['pooler_cpu_us']:.0f}" if r.get("pooler_cpu_us") is not None else "-"
        out.append(
            f"| {r['label']} | {r['rate']:,.0f} | {r['left_in_table']:,} | "
            f"{r['leased_distinct']:,} | {r['leased_twice_or_more']} | {settled} | {errors} | "
            f"{r.get('client_cpu_us', 0):.0f} | {r.get('server_cpu_us', 0):.0f} | {bouncer} |"
        )
    out += [
        "",
        "Session advisory lock probe during each drain (lock and unlock as two "
        "autocommit statements on one client connection):",
        "",
    ]
    out += [f"- {r['label']}: {r['session_lock_probe']}" for r in runs]
    out += ["", "## Machine", ""] + [f"- {k}: {v}" for k, v in about.items()]
    return "\n".join(out) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "consume":
        url, queue, batch, threads, out, go = sys.argv[2:8]
        consume(url, queue, int(batch), int(threads), Path(out), Path(go))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=10)
    args = parser.parse_args()
    command = " ".join([".venv/bin/python -m bench.pooler", *sys.argv[1:]])
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    tmp = Path(tempfile.mkdtemp(prefix="tablequeue-pooler-"))
    server = PostgresServer(Path(tempfile.mkdtemp(prefix="tablequeue-pg-")))
    server.init()
    server.start("max_connections=300")
    try:
        direct, postmaster = server.url, postmaster_pid(server.data)
        probes: dict[str, str] = {"tablequeue engine, direct": probe_timeout(direct)}
        with pgbouncer(server.port, "extra_float_digits") as url:
            probes["tablequeue engine through pgbouncer (defaults)"] = probe_timeout(url)
        with pgbouncer(server.port, "extra_float_digits,options") as url:
            probes["tablequeue engine through pgbouncer, `ignore_startup_parameters = options`"] = (
                probe_timeout(url)
            )
            probes["LISTEN direct, NOTIFY direct"] = probe_listen(direct, direct)
            probes["LISTEN through pgbouncer, NOTIFY direct"] = probe_listen(url, direct)
            runs = [drain("direct", direct, direct, postmaster, args, tmp)]
            print(runs[-1], flush=True)
            runs.append(
                drain("pgbouncer, prepare_threshold=None", url, direct, postmaster, args, tmp)
            )
            print(runs[-1], flush=True)
            runs.append(
                drain(
                    "pgbouncer, psycopg's default prepare_threshold (5)",
                    url,
                    direct,
                    postmaster,
                    args,
                    tmp,
                    prepare=True,
                )
            )
            print(runs[-1], flush=True)
        with psycopg.connect(direct) as conn:
            version = conn.execute("SHOW server_version").fetchone()
    finally:
        with contextlib.suppress(Exception):
            server.stop("immediate")
        shutil.rmtree(server.base, ignore_errors=True)
    bouncer = subprocess.run(["pgbouncer", "--version"], capture_output=True, text=True)
    about = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": f"{os.cpu_count()} cores",
        "postgresql": f"{version[0] if version else '?'} (throwaway, fsync off, same machine)",
        "pgbouncer": bouncer.stdout.splitlines()[0] if bouncer.stdout else "?",
        "psycopg": psycopg.__version__,
        "load average at start": load,
        "load average at end": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    document = {
        "command": command,
        "machine": about,
        "processes": args.processes,
        "probes": probes,
        "runs": runs,
    }
    stem = ROOT / "bench" / "results" / f"pooler-{datetime.now(UTC):%Y-%m-%d}"
    stem.with_suffix(".json").write_text(json.dumps(document, indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown(document))
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"wrote {stem}.md and .json")


if __name__ == "__main__":
    main()
