r"""The bound: pgbench running tablequeue's own lease and complete statements, no Python between.

`pair`: the lease is `Queue._lease_statement()` compiled for PostgreSQL (RETURNING every column,
as the worker's), wrapped as `WITH leased AS (...) SELECT array_agg(id)` so pgbench can keep
the ids (`\gset`); then the complete is `Queue._delete_done()` over the batch: the same
predicate with `id = ANY(:ids)` for `id = :id` and without `version = :version` (all version
1 here), one DELETE per batch instead of one pipelined DELETE per message. Both changes make
the bound cheaper than tablequeue's real round trips, so it stays a bound.
`delete`: one statement, `DELETE ... WHERE id IN (<the lease's candidate subquery with
FOR UPDATE SKIP LOCKED>) RETURNING *`: the floor for any at-most-once table queue.
Both with `-M prepared` (psycopg prepares repeated statements too), one client per consumer.
"""

from __future__ import annotations

import glob
import math
import re
import subprocess
from pathlib import Path

from sqlalchemy.dialects import postgresql

from bench.systems.common import Row
from bench.systems.tq import TableQueue


def pgbench_binary() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"))
    if not found:
        raise RuntimeError("pgbench not found: apt-get install -y postgresql-contrib")
    return found[-1]


def scripts(system: TableQueue, queue: str, batch: int) -> dict[str, str]:
    q = system.db.queue(queue)
    dialect = postgresql.psycopg.dialect()  # type: ignore[attr-defined]
    lease = str(q._lease_statement().compile(dialect=dialect))
    done = str(q._delete_done().compile(dialect=dialect))
    values = {"attempts_1": "1", "b_lease": "1800", "b_n": str(batch)}
    values |= {"b_owner": ":owner", "b_cid": ":cid"}
    lease = re.sub(r"%\((\w+)\)s", lambda m: values[m.group(1)], lease)
    table = q.table.name
    by_id = re.sub(rf"{table}\.id = %\(b_id\)s::BIGINT", f"{table}.id = ANY(:ids::BIGINT[])", done)
    by_id = by_id.replace(f" AND {table}.version = %(b_version)s::INTEGER", "")
    assert "b_id" not in by_id and "b_version" not in by_id, by_id
    by_id = re.sub(r"%\((\w+)\)s", lambda m: values[m.group(1)], by_id)
    head = "\\set cid random(1, 1000000000000)\n\\set owner :client_id\n"
    flat = " ".join(lease.split())
    candidates = flat.split(f"WHERE {table}.id IN (", 1)[1].rsplit(") RETURNING ", 1)
    one = f"DELETE FROM {table} WHERE {table}.id IN ({candidates[0]})"  # noqa: S608
    one += f" RETURNING {candidates[1]}"
    pair = f"WITH leased AS ({flat}) SELECT coalesce(array_agg(id), '{{}}') AS ids"
    pair += " FROM leased"
    return {
        "pair": head + pair + "\n\\gset\n" + " ".join(by_id.split()) + ";\n",
        "delete": one + ";\n",
    }


class Pgbench(TableQueue):
    """Not a consumer process: `drain` runs pgbench on a filled tablequeue table."""

    variant = "pair"
    label = "pgbench bound (lease + delete)"

    def drain(self, queue: str, workers: int, batch: int, n: int, timebox: float, tmp: Path) -> Row:
        script = tmp / f"{self.variant}-{batch}.sql"
        script.write_text(scripts(self, queue, batch)[self.variant])
        command = [pgbench_binary(), "-n", "-M", "prepared", "-c", str(workers)]
        command += ["-j", str(workers), "-f", str(script)]
        if batch >= 100:  # exactly drains the queue: the rate is not cut by an emptied queue
            command += ["-t", str(math.ceil(n / batch / workers))]
        else:  # a time box the queue outlasts
            command += ["-T", str(max(1, round(timebox)))]
        output = subprocess.run(
            [*command, self.url], capture_output=True, text=True, check=True
        ).stdout
        tps = float(re.search(r"tps = ([\d.]+)", output).group(1))  # type: ignore[union-attr]
        txns = int(re.search(r"actually processed: (\d+)", output).group(1))  # type: ignore[union-attr]
        seconds = txns / tps
        drained = n - self.remaining(queue)
        return {"messages": drained, "seconds": seconds, "rate": drained / seconds}


class PgbenchDelete(Pgbench):
    variant = "delete"
    label = "pgbench one-statement DELETE"
