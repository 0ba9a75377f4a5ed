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

from bench.cpu import Meter
from bench.systems.common import Row
from bench.systems.tq import TableQueue

# Batch 1: pgbench drains this many of the queue's messages (all of a smaller queue); at
# 4,000-11,000 msg/s that is a few seconds, about the other systems' time box.
BATCH1_MESSAGES = 20_000


def pgbench_binary() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"))
    if not found:
        raise RuntimeError("pgbench not found: apt-get install -y postgresql-contrib")
    return found[-1]


def scripts(system: TableQueue, queue: str, batch: int) -> dict[str, str]:
    q = system.db.queue(queue)
    dialect = postgresql.psycopg.dialect()  # type: ignore[no-untyped-call]
    queries = q.storage.queries(q.table)
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
        portion = n if batch >= 100 else min(n, BATCH1_MESSAGES)
        command = [pgbench_binary(), "-n", "-M", "prepared", "-c", str(workers)]
        command += ["-j", str(workers), "-f", str(script)]
        command += ["-t", str(transactions(portion, batch, workers))]
        meter = Meter(self.server_pid)
        output = subprocess.run(
            [*command, self.url], capture_output=True, text=True, check=True
        ).stdout
        drained = n - self.remaining(queue)
        return measured(output, drained) | meter.per_message(drained)


def transactions(portion: int, batch: int, workers: int) -> int:
    """Transactions per client so that the clients together drain `portion` messages: every
    transaction leases a full batch (the queue holds at least `portion`), except at most one
    per client when `portion` is not a multiple of batch x clients."""
    return math.ceil(portion / batch / workers)


def measured(output: str, drained: int) -> Row:
    """The rate from what pgbench did: the messages that left the table (`drained`, counted
    in the table afterwards) over pgbench's own duration, transactions / tps (connections
    excluded). With `-t` no client idles on an empty queue, so no empty transaction pads the
    duration (the time-boxed `-T` runs did: a 5,000-message queue emptied in 1 s of a 4 s
    box read 1,250 msg/s whatever the speed)."""
    tps = re.search(r"^tps = ([\d.]+)", output, re.MULTILINE)
    txns = re.search(r"actually processed: (\d+)", output)
    if not tps or not txns or float(tps.group(1)) <= 0:
        raise RuntimeError(f"unexpected pgbench output: {output[-500:]}")
    seconds = int(txns.group(1)) / float(tps.group(1))
    return {"messages": drained, "seconds": seconds, "rate": drained / seconds}


class PgbenchDelete(Pgbench):
    variant = "delete"
    label = "pgbench one-statement DELETE"
