"""What `?pooler=transaction`'s `SET LOCAL statement_timeout` costs per transaction.

    .venv/bin/python -m bench.pooler_set_local [--messages 5000] [--batch 10] [--rounds 3]

A throwaway PostgreSQL and PgBouncer (transaction mode, tests/support); one consumer drains a
filled queue with `settle_and_lease` through the pooler, `?pooler=transaction` both times:
with the statement timeout (a `SET LOCAL` round trip per transaction) and with
`TABLEQUEUE_DB_STATEMENT_TIMEOUT=0` (none: the timeout left to the role). Rounds alternate.
Prints wall-clock µs per transaction of each; a benchmark, not a test (the machine's load
moves both).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from tablequeue import NewMessage, connect
from tablequeue.models import Completion
from tablequeue.spec import QueueResource
from tablequeue.storage.timeouts import DatabaseTimeouts
from tests.support.pgbouncer_server import pgbouncer
from tests.support.postgres_server import postgres_server


def drain(url: str, direct: str, name: str, messages: int, batch: int, timeout: float) -> float:
    """µs of wall clock per settle_and_lease transaction, draining `messages`."""
    with connect(direct) as db:
        db.apply(QueueResource.from_name(name))
        queue = db.queue(name)
        for start in range(0, messages, 1000):
            queue.enqueue_many(
                [NewMessage(message={"n": n}) for n in range(start, min(start + 1000, messages))]
            )
    timeouts = DatabaseTimeouts(statement_seconds=timeout or None)
    with connect(url, timeouts=timeouts, pool_size=1) as db:
        queue = db.queue(name)
        done: list[Completion] = []
        transactions = 0
        began = time.perf_counter()
        while True:
            _, lease = queue.settle_and_lease("bench", done, batch)
            transactions += 1
            done = [Completion(m) for m in lease.messages]
            if not done:
                break
        seconds = time.perf_counter() - began
    with connect(direct) as db:
        db.delete_queue(name, drop_table=True)
    return seconds / transactions * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    results: dict[str, list[float]] = {"SET LOCAL per transaction": [], "none": []}
    with postgres_server() as server:
        direct = server.create_database("bench")
        with pgbouncer(server.port, "bench", pool_size=4) as url:
            pooled = url + "?pooler=transaction"
            for i in range(args.rounds):
                for label, timeout in (("SET LOCAL per transaction", 300.0), ("none", 0.0)):
                    name = f"setlocal{i}{'a' if timeout else 'b'}"
                    results[label].append(
                        drain(pooled, direct, name, args.messages, args.batch, timeout)
                    )
    print(f"load average at start {load}, at end", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for label, values in results.items():
        shown = ", ".join(f"{v:.0f}" for v in values)
        print(f"{label}: median {statistics.median(values):.0f} µs/transaction ({shown})")


if __name__ == "__main__":
    main()
