"""One `Queue.enqueue` per message on a throwaway PostgreSQL: CPU per message and round trips.

    .venv/bin/python -m bench.enqueue_one [--messages 3000] [--profile] [--connection]

Prints the client's and the server's CPU per message (bench/cpu.py), the load average, and the
statements (= round trips: psycopg sends one at a time) PostgreSQL logged per enqueue, counted
from its statement log (`log_statement = all`, switched on after the CPU measurement) between
two marker statements. `--profile` prints cProfile's top functions of the measured loop;
`--connection` enqueues in the caller's transaction (a psycopg connection, one commit per
message) instead. A benchmark, not a test: nothing asserts on its figures.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from bench.cpu import Meter, postmaster_pid
from bench.worker import body
from tablequeue import Queue, connect
from tablequeue.spec import QueueResource
from tests.support.postgres_server import PostgresServer, postgres_server

MARK = "tablequeue-bench-mark"


def _statements_between_marks(log: Path) -> int:
    lines = log.read_text().splitlines()
    marks = [i for i, line in enumerate(lines) if MARK in line and "LOG:" in line]
    between = lines[marks[-2] + 1 : marks[-1]]
    return sum(1 for line in between if "LOG:  statement:" in line or "LOG:  execute" in line)


def _enqueuer(queue: Queue, own: psycopg.Connection[Any] | None) -> Callable[[int], None]:
    """Enqueues n messages one call each, in the caller's transaction when `own` is given."""

    def enqueue(n: int) -> None:
        for i in range(n):
            if own is None:
                queue.enqueue(body(i))
            else:
                with own.transaction():
                    queue.enqueue(body(i), connection=own)

    return enqueue


def round_trips(server: PostgresServer, enqueue: Callable[[int], None]) -> float:
    """The statements PostgreSQL logs per call of `enqueue(1)` (its statement log switched on
    for this; bench/cycle.py passes its own cycle)."""
    with psycopg.connect(server.url, autocommit=True) as admin:
        admin.execute("ALTER SYSTEM SET log_statement = 'all'")
        admin.execute("SELECT pg_reload_conf()")
        time.sleep(0.5)  # the reload reaches every backend before its next statement
        enqueue(3)
        admin.execute(f"SELECT '{MARK}'")
        enqueue(10)
        admin.execute(f"SELECT '{MARK}'")
    return _statements_between_marks(server.base / "log") / 10


def _measure(args: argparse.Namespace, server: PostgresServer) -> None:
    db = connect(server.url)
    db.apply(QueueResource.from_name("orders"))
    queue = db.queue("orders")
    own = psycopg.connect(server.url) if args.connection else None
    enqueue = _enqueuer(queue, own)
    enqueue(200)  # warm: pool, prepared statements, compiled cache
    load = os.getloadavg()
    meter = Meter(postmaster_pid(server.data))
    began = time.perf_counter()
    profile = cProfile.Profile(time.process_time) if args.profile else None  # CPU, not waiting
    if profile is not None:
        profile.runcall(enqueue, args.messages)
    else:
        enqueue(args.messages)
    elapsed = time.perf_counter() - began
    cpu = meter.per_message(args.messages)
    end_load = os.getloadavg()
    trips = round_trips(server, enqueue)
    if os.environ.get("SHOW_LOG"):
        print((server.base / "log").read_text()[-6000:])
    print(
        f"{args.messages} enqueues{' (caller transaction)' if own else ''}:"
        f" {args.messages / elapsed:,.0f} msg/s, client {cpu['client_cpu_us']:.0f} µs/msg,"
        f" server {cpu['server_cpu_us']:.0f} µs/msg, round trips per enqueue {trips:g},"
        f" load {load[0]:.2f} -> {end_load[0]:.2f}"
    )
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    if own is not None:
        own.close()
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--connection", action="store_true", help="the caller's transaction")
    args = parser.parse_args()
    with postgres_server() as server:
        _measure(args, server)


if __name__ == "__main__":
    main()
