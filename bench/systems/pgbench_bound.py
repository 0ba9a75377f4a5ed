r"""The bound: pgbench running tablequeue's own lease and complete statements, no Python between.

`pair`: the lease is `queries.lease()` compiled for PostgreSQL (RETURNING every column,
as the worker's), wrapped as `WITH leased AS (...) SELECT json_agg(...)` so pgbench can keep the
leased rows (`\gset`); then the complete is exactly `queries.delete_done()`: one DELETE per batch
reading the (id, version, correlation id) of every message from one JSON parameter. Two
transactions per batch, as the worker's `settle_and_lease` does in one; that makes the bound
cheaper than tablequeue's real work, so it stays a bound.
`delete`: one statement, `DELETE ... WHERE id IN (<the lease's candidate subquery with
FOR UPDATE SKIP LOCKED>) RETURNING *`: the floor for any at-most-once table queue.
Both with `-M prepared` (psycopg prepares repeated statements too), one client per consumer."""

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
    queries = q.database.queries(q.table)
    lease = str(queries.lease().compile(dialect=dialect))
    done = str(queries.delete_done()[0].compile(dialect=dialect))
    values = {"attempts_1": "1", "b_lease": "1800", "b_n": str(batch)}
    values |= {"b_queue": "'" + queue.replace("'", "") + "'"}  # a validated queue name
    values |= {"b_owner": ":owner", "b_cid": ":cid", "b_rows": ":rows"}
    lease = re.sub(r"%\((\w+)\)s", lambda m: values[m.group(1)], lease)
    done = re.sub(r"%\((\w+)\)s", lambda m: values[m.group(1)], done)
    table = q.table.name
    head = "\\set cid random(1, 1000000000000)\n\\set owner :client_id\n"
    flat = " ".join(lease.split())
    candidates = flat.split(f"WHERE {table}.id IN (", 1)[1].rsplit(") RETURNING ", 1)
    one = f"DELETE FROM {table} WHERE {table}.id IN ({candidates[0]})"  # noqa: S608
    one += f" RETURNING {candidates[1]}"
    rows = "json_build_object('b_id', id, 'b_version', version, 'b_cid', correlation_id)"
    pair = f"WITH leased AS ({flat}) SELECT coalesce(json_agg({rows}), '[]') AS rows FROM leased"  # noqa: S608 (generated statements)
    return {
        "pair": head + pair + "\n\\gset\n" + " ".join(done.split()) + ";\n",
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
