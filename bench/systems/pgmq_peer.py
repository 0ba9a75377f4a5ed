"""PGMQ, installed from the SQL that the `pgmq` package ships (no compiled extension).

The raw loop: `pgmq.read(queue, 30, batch)` then `pgmq.delete(queue, ids)`, each autocommit,
10 ms sleep on an empty read. Enqueue: `pgmq.send` and `pgmq.send_batch`.
"""

from __future__ import annotations

import itertools
import os
import sys
import time

import psycopg
from psycopg.types.json import Jsonb

from bench.systems.common import BODY_SQL_PG_PARAMS, ConsumerArgs, Row, System, until

_names = itertools.count()


class Pgmq(System):
    label = "PGMQ raw loop"
    module = "bench.systems.pgmq_peer"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.conn = psycopg.connect(url, autocommit=True)
        installed = self.conn.execute("SELECT to_regnamespace('pgmq') IS NOT NULL").fetchone()
        if not (installed and installed[0]):
            from pgmq.install import get_embedded_install_sql

            with self.conn.transaction():
                self.conn.execute(get_embedded_install_sql())  # type: ignore[arg-type]

    def create(self) -> str:
        name = f"peer_{os.getpid()}_{next(_names)}"
        self.conn.execute("SELECT pgmq.create(%s)", [name])
        return name

    def drop(self, queue: str) -> None:
        self.conn.execute("SELECT pgmq.drop_queue(%s)", [queue])

    def enqueue_each(self, queue: str, items: list[Row], deadline: float) -> int:
        for done, item in enumerate(items):
            if not until(deadline):
                return done
            self.conn.execute("SELECT * FROM pgmq.send(%s, %s)", [queue, Jsonb(item)])
        return len(items)

    def enqueue_batches(self, queue: str, items: list[Row], size: int, deadline: float) -> int:
        for first in range(0, len(items), size):
            if not until(deadline):
                return first
            chunk = [Jsonb(m) for m in items[first : first + size]]
            self.conn.execute("SELECT * FROM pgmq.send_batch(%s, %s::jsonb[])", [queue, chunk])
        return len(items)

    def fill(self, queue: str, n: int) -> None:
        self.conn.execute(
            "SELECT count(*) FROM pgmq.send_batch(%s, ARRAY("  # noqa: S608 (constant SQL)
            f"SELECT {BODY_SQL_PG_PARAMS} FROM generate_series(1, %s) AS i))",
            [queue, n],
        )

    def remaining(self, queue: str) -> int:
        row = self.conn.execute(f'SELECT count(*) FROM pgmq."q_{queue}"').fetchone()  # noqa: S608
        return int(row[0]) if row else 0

    def relations(self, queue: str) -> list[str]:
        return [f'pgmq."q_{queue}"', f'pgmq."a_{queue}"']

    def close(self) -> None:
        self.conn.close()


def consume(args: ConsumerArgs) -> None:
    with psycopg.connect(args.url, autocommit=True) as conn:
        args.is_ready()
        while True:
            rows = conn.execute(
                "SELECT * FROM pgmq.read(%s, 30, %s)", [args.queue, args.batch]
            ).fetchall()
            if not rows:
                time.sleep(0.01)
                continue
            for row in rows:
                args.started(row[5].get("Seq") if isinstance(row[5], dict) else None)
            conn.execute("SELECT pgmq.delete(%s, %s::bigint[])", [args.queue, [r[0] for r in rows]])


if __name__ == "__main__":
    consume(ConsumerArgs(sys.argv))
