"""The server's share of the worker's cycle, statement by statement: `pg_stat_statements` on a
throwaway PostgreSQL while `Queue.settle_and_lease` drains a backlog (as `bench/cycle.py` does).

    .venv/bin/python -m bench.statements [--batch 100] [--messages 20000 60000]
        [--keep-results-for 0s]

For each backlog size: each statement's calls, its execution time per message (the server's
time inside the executor, not the protocol around it), shared buffers hit and WAL records and
bytes per message, and the queue table's updates, HOT updates and deletes. A backlog of N
messages drained in one go leaves N leased-and-settled rows behind for the next vacuum: what
grows with N is a plan that reads them. A benchmark, not a test: nothing asserts on its figures.
"""

from __future__ import annotations

import argparse

import psycopg

from bench.cycle import add_keep_results_option, drain, fill, orders_queue
from tablequeue import connect
from tests.support.postgres_server import postgres_server

PG_STAT_STATEMENTS = ("shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=all")

STATEMENTS = """
SELECT calls, rows, total_exec_time, shared_blks_hit, wal_records, wal_bytes, query
FROM pg_stat_statements WHERE query NOT LIKE '%%pg_stat%%' AND calls > 1
ORDER BY total_exec_time DESC LIMIT 6
"""


def _measure(args: argparse.Namespace, messages: int) -> None:
    with postgres_server(*PG_STAT_STATEMENTS) as server:
        with psycopg.connect(server.url, autocommit=True) as connection:
            connection.execute("CREATE EXTENSION pg_stat_statements")
        with connect(server.url) as db:  # closed before reading: its sessions flush their stats
            queue = orders_queue(db, args)
            fill(queue, 2 * args.batch)
            drain(queue, args.batch)  # prepared statements, pool
            fill(queue, messages)
            with psycopg.connect(server.url, autocommit=True) as connection:
                connection.execute("ANALYZE orders")  # as autovacuum would after the fill
                connection.execute("SELECT pg_stat_statements_reset()")
                connection.execute("SELECT pg_stat_reset()")
            finished = drain(queue, args.batch)
        with psycopg.connect(server.url, autocommit=True) as connection:
            rows = connection.execute(STATEMENTS).fetchall()
            [table] = connection.execute(
                "SELECT n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables"
                " WHERE relname = 'orders'"
            ).fetchall()
    print(f"\n### Backlog {messages:,}, batch {args.batch}: {finished:,} messages drained\n")
    print("| statement | calls | exec µs/msg | buffers hit/msg | WAL records/msg | WAL bytes/msg |")
    print("|---|--:|--:|--:|--:|--:|")
    for calls, _, exec_ms, hit, wal_records, wal_bytes, query in rows:
        text = " ".join(query.split())
        print(
            f"| `{text[:70]}...` | {calls} | {exec_ms * 1000 / finished:.1f} | "
            f"{hit / finished:.1f} | {wal_records / finished:.1f} | {wal_bytes / finished:.0f} |"
        )
    updated, hot, deleted = table
    print(f"\nQueue table: {updated:,} updates ({hot:,} HOT), {deleted:,} deletes.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--messages", type=int, nargs="+", default=[5_000, 20_000, 60_000])
    add_keep_results_option(parser)
    args = parser.parse_args()
    for messages in args.messages:
        _measure(args, messages)


if __name__ == "__main__":
    main()
