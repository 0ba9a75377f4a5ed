"""The cost of spec.globalConcurrency on a lease, A/B on a throwaway PostgreSQL (tests/support).

Two queues of `--rows` due messages, one without limits and one with a global concurrency far
above what the bench holds (so every lease takes its batch): alternating leases of `--batch`
messages, each given back at once, timed end to end (the transaction, all its statements). Also
prints the plan of the count of Leased messages at that size (EXPLAIN ANALYZE, BUFFERS).

    .venv/bin/python -m bench.global_concurrency --rows 100000
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import sqlalchemy as sa

from tablequeue import Database, Queue, connect
from tablequeue.spec import QueueResource
from tests.support.postgres_server import postgres_server


def fill(database: Database, name: str, rows: int, **spec: Any) -> None:
    database.apply(QueueResource.from_name(name, **spec))
    with database.transaction() as connection:
        table = sa.Table(name, sa.MetaData(), autoload_with=connection)
        now = sa.func.now()
        rows_of = sa.select(
            sa.literal("Pending"),
            sa.literal(0),
            sa.cast(sa.literal("{}"), table.c.message.type),
            sa.literal(1),
            sa.literal(0),
            now,
            now,
            now,
            sa.func.gen_random_uuid(),
        ).select_from(sa.func.generate_series(1, rows))
        columns = ["status", "priority", "message", "version", "attempts"]
        columns += ["process_after", "created_at", "updated_at", "tracking_id"]
        connection.execute(table.insert().from_select(columns, rows_of))
        connection.execute(sa.text("ANALYZE " + connection.dialect.identifier_preparer.quote(name)))


def lease_and_give_back(queue: Queue, batch: int) -> float:
    started = time.perf_counter()
    ids = [m.id or 0 for m in queue.lease("bench", batch).messages]
    elapsed = time.perf_counter() - started
    assert len(ids) == batch
    queue.release("bench", ids)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=500)
    args = parser.parse_args()
    with postgres_server() as server, connect(server.create_database("bench")) as database:
        fill(database, "unlimited", args.rows)
        fill(database, "capped", args.rows, global_concurrency=1_000_000)
        database.queue("capped").lease("held", 50)  # 50 Leased rows for the count to find
        # One handle per queue, as a worker keeps: the capped one knows its limit after a lease.
        queues = {name: database.queue(name) for name in ("unlimited", "capped")}
        times: dict[str, list[float]] = {name: [] for name in queues}
        for _ in range(args.rounds):
            for name, found in times.items():
                found.append(lease_and_give_back(queues[name], args.batch))
        with database.transaction() as connection:
            plan = connection.execute(
                sa.text(
                    "EXPLAIN (ANALYZE, BUFFERS) SELECT count(*) FROM capped WHERE status = 'Leased'"
                )
            ).scalars()
            print("\n".join(plan))
    for name, found in times.items():
        median = statistics.median(found) * 1000
        print(f"{name}: median {median:.2f} ms per lease of {args.batch} ({args.rounds} rounds)")


if __name__ == "__main__":
    main()
