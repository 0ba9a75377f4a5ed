"""The worker's database cycle on a throwaway PostgreSQL, in-process: record the outcomes of a
batch and lease the next one (`Queue.settle_and_lease`, as a worker's loop does), until the
queue is empty. CPU per message and round trips per cycle.

    .venv/bin/python -m bench.cycle [--batch 100] [--messages 20000] [--profile]
        [--keep-results-for 0s]

Prints the client's CPU per message (this process: tablequeue, SQLAlchemy, psycopg) and the
server's (bench/cpu.py), the rate, the load average and the statements PostgreSQL logged per
cycle (= round trips; BEGIN and COMMIT included). What a worker adds around the cycle (its
event loop, tasks, metrics, the handler) is not in it: `bench/worker.py` and `bench/peers.py`
measure the whole worker. `--profile` prints cProfile's top functions (CPU time, not waiting).
A benchmark, not a test: nothing asserts on its figures.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

from bench.cpu import Meter, postmaster_pid
from bench.enqueue_one import round_trips
from bench.worker import body
from tablequeue import Completion, Database, NewMessage, Queue, connect
from tablequeue.spec import QueueResource
from tests.support.postgres_server import PostgresServer, postgres_server


def fill(queue: Queue, messages: int) -> None:
    for start in range(0, messages, 1000):
        count = min(1000, messages - start)
        queue.enqueue_many([NewMessage(message=body(start + i)) for i in range(count)])


def drain(queue: Queue, batch: int) -> int:
    """Cycles until nothing is leased; the messages finished."""
    finished = 0
    _, leased = queue.settle_and_lease("bench", [], batch)
    while leased.messages:
        finished += len(leased.messages)
        outcomes = [Completion(m) for m in leased.messages]
        _, leased = queue.settle_and_lease("bench", outcomes, batch)
    return finished


def add_keep_results_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keep-results-for", help="the queue's keepResultsFor (default: the spec's, 1h)"
    )


def orders_queue(db: Database, args: argparse.Namespace) -> Queue:
    """The queue `orders`, applied with `--keep-results-for` if given."""
    spec = {} if args.keep_results_for is None else {"keepResultsFor": args.keep_results_for}
    db.apply(QueueResource.from_name("orders", **spec))
    return db.queue("orders")


def _measure(args: argparse.Namespace, server: PostgresServer) -> None:
    db = connect(server.url)
    queue = orders_queue(db, args)
    fill(queue, 2 * args.batch)
    drain(queue, args.batch)  # warm: pool, prepared statements, compiled cache
    fill(queue, args.messages)
    load = os.getloadavg()
    meter = Meter(postmaster_pid(server.data))
    began = time.perf_counter()
    profile = cProfile.Profile(time.process_time) if args.profile else None
    finished = profile.runcall(drain, queue, args.batch) if profile else drain(queue, args.batch)
    elapsed = time.perf_counter() - began
    cpu = meter.per_message(finished)
    end_load = os.getloadavg()

    fill(queue, 20 * args.batch)  # more than the 13 cycles counted: each one leases a batch
    held = queue.settle_and_lease("bench", [], args.batch)[1].messages

    def cycles(n: int) -> None:
        nonlocal held
        for _ in range(n):
            outcomes = [Completion(m) for m in held]
            held = queue.settle_and_lease("bench", outcomes, args.batch)[1].messages

    trips = round_trips(server, cycles)
    print(
        f"batch {args.batch}, {finished} messages: {finished / elapsed:,.0f} msg/s,"
        f" client {cpu['client_cpu_us']:.1f} µs/msg, server {cpu['server_cpu_us']:.1f} µs/msg,"
        f" round trips per cycle {trips:g}, load {load[0]:.2f} -> {end_load[0]:.2f}"
    )
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--profile", action="store_true")
    add_keep_results_option(parser)
    args = parser.parse_args()
    with postgres_server() as server:
        _measure(args, server)


if __name__ == "__main__":
    main()
