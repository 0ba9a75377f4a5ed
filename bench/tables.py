"""Size and upkeep of PostgreSQL tables, as benchmarks report them (bench.peers' bloat
workload, bench.soak): sizes, live and dead row versions, vacuums."""

from __future__ import annotations

from typing import Any

import psycopg

SIZES_SQL = """
SELECT pg_relation_size(c.oid), pg_indexes_size(c.oid), s.n_live_tup, s.n_dead_tup,
       s.autovacuum_count + s.vacuum_count, pg_total_relation_size(c.oid), s.autovacuum_count
FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.oid = %s::regclass
"""


def sizes(url: str, relations: list[str]) -> dict[str, Any]:
    """Per table, MiB: the table (`table_mib`, main fork), its indexes (`indexes_mib`) and
    everything (`total_mib`: also TOAST and the free-space and visibility maps); live and dead
    row versions, and vacuums (`vacuums`: manual and automatic, `autovacuums`: automatic only),
    from the cumulative statistics (which lag by up to a second)."""
    out: dict[str, Any] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        for rel in relations:
            row = conn.execute(SIZES_SQL, [rel]).fetchone()
            assert row is not None, rel
            out[rel] = {
                "table_mib": row[0] / 2**20,
                "indexes_mib": row[1] / 2**20,
                "live": row[2],
                "dead": row[3],
                "vacuums": row[4],
                "total_mib": row[5] / 2**20,
                "autovacuums": row[6],
            }
    return out
