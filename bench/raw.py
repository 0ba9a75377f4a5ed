"""The raw-SQL bound: lease and delete with plain psycopg in one process, no worker around it.

The lease is tablequeue's own statement (compiled from `Database.queries(table).lease()`,
RETURNING every column like the worker's), each batch then one
`DELETE ... WHERE id = ANY(ids)`; one autocommit transaction each. Exits when a lease comes
back empty.

Usage: python -m bench.raw URL QUEUE BATCH CPU_FILE (appends the loop's CPU seconds)
"""

from __future__ import annotations

import os
import sys
import time
import uuid

import psycopg
from psycopg import sql

from tablequeue import connect


def main() -> None:
    url, name, batch, cpu_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    with connect(url) as db:
        queue = db.queue(name)
        compiled = db.queries(queue.table).lease().compile(dialect=db.engine.dialect)
    lease = str(compiled)
    params = dict(compiled.params) | {
        "b_n": batch,
        "b_lease": 1800.0,
        "b_owner": f"raw-{os.getpid()}",
        "b_queue": name,
    }
    delete = sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(sql.Identifier(queue.table.name))
    start = time.process_time()
    with psycopg.connect(url, autocommit=True) as conn:
        while rows := conn.execute(lease, params | {"b_cid": uuid.uuid4().hex}).fetchall():
            conn.execute(delete, [[row[0] for row in rows]])
    with open(cpu_file, "a") as out:
        out.write(f"{time.process_time() - start}\n")


if __name__ == "__main__":
    main()
