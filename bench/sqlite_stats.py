"""The stats workload of bench.peers on SQLite: `Queue.stats()` on a large tablequeue table.

The table is built as the PostgreSQL one is, in the database: `TableQueue.fill` (one INSERT ...
SELECT over a recursive CTE, every index in place), then one UPDATE turns 99% of the rows
Processed. No ANALYZE: tablequeue leaves SQLite without statistics, and so does the drain
workload. Then `Queue.stats()` is timed 20 times after 2 warm-ups, in-process
(`bench.peers_workloads.time_stats`, as on PostgreSQL).
"""

from __future__ import annotations

import time
from pathlib import Path

import sqlalchemy as sa

from bench.peers_workloads import time_stats
from bench.systems.common import Row
from bench.systems.tq import TableQueue


def stats_cost_sqlite(tq: TableQueue, rows: int) -> Row:
    queue = tq.create()
    q = tq.db.queue(queue)
    t = q.table
    built = time.perf_counter()
    tq.fill(queue, rows)
    processed = {"status": "Processed", "attempts": 1, "processed_at": t.c.updated_at}
    with tq.db.transaction() as connection:
        connection.execute(sa.update(t).where(t.c.id % 100 != 0).values(processed))
    build_seconds = time.perf_counter() - built
    database = Path(sa.make_url(tq.url).database or "")
    size = sum(p.stat().st_size for p in database.parent.glob(database.name + "*"))
    return {
        "rows": rows,
        "build_seconds": build_seconds,
        "total_size_mib": size / 2**20,  # the database file and its WAL: every queue in it
        "ms": time_stats(tq, queue, rows),
    }
