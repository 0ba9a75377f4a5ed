"""The cost of spec.groups on a lease, A/B on a throwaway PostgreSQL (tests/support).

Queues of `--rows` due messages: `plain` (no groups, no keys) and `grouped` (groups of one at a
time, `--keys` keys given in turn, so ids 1..keys are the heads). Prints the lease statement's
plan of each (EXPLAIN ANALYZE, BUFFERS, in a transaction rolled back), then the plan of the
worst case, `busy`: the same grouped queue with the head of every key Leased, where a lease
finds nothing and reads every waiting message to know it; and the grouped queue's plan in the
counting form a concurrency above 1 uses. Then a drain of `--drain` messages
from each of plain and grouped (lease `--batch`, complete them; the queues alternate round by
round), timed end to end.

    .venv/bin/python -m bench.groups --rows 100000 --keys 1000
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import sqlalchemy as sa

from tablequeue import Completion, Database, connect
from tablequeue.dialects import GroupLease
from tablequeue.spec import QueueResource
from tests.support.postgres_server import postgres_server

ONE_AT_A_TIME = GroupLease(1, hold=False)


def fill(database: Database, name: str, rows: int, keys: int | None, **spec: Any) -> None:
    database.apply(QueueResource.from_name(name, **spec))
    with database.transaction() as connection:
        table = sa.Table(name, sa.MetaData(), autoload_with=connection)
        series = sa.func.generate_series(1, rows).table_valued("n").render_derived()
        key = sa.cast(series.c.n % keys, sa.String()) if keys else sa.null()
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
            key,
        ).select_from(series)
        columns = ["status", "priority", "message", "version", "attempts"]
        columns += ["process_after", "created_at", "updated_at", "tracking_id", "group_key"]
        connection.execute(table.insert().from_select(columns, rows_of))
        connection.execute(sa.text("ANALYZE " + connection.dialect.identifier_preparer.quote(name)))


def explain(database: Database, name: str, group: GroupLease | None, batch: int) -> str:
    """The plan of one lease of `batch` (run, then rolled back)."""
    queries = database.queries(database.queue(name).table)
    statement = queries.lease(group=group)
    compiled = statement.compile(dialect=database.engine.dialect)
    values = {"b_queue": name, "b_n": batch, "b_lease": 30.0, "b_owner": "bench", "b_cid": "bench"}
    parameters = compiled.construct_params(values | ({"b_k": group.limit} if group else {}))
    connection = database.engine.connect()
    try:
        with connection.begin() as transaction:
            plan = connection.exec_driver_sql(
                "EXPLAIN (ANALYZE, BUFFERS) " + str(compiled), parameters
            ).scalars()
            text = "\n".join(plan)
            transaction.rollback()
    finally:
        connection.close()
    return text


def drain(database: Database, names: tuple[str, ...], messages: int, batch: int) -> list[float]:
    """Messages per second of each queue's lease + complete rounds, alternating between the
    queues round by round (so that a busy spell of the machine falls on all of them), until
    each did `messages`."""
    queues = [database.queue(name) for name in names]
    seconds = [0.0] * len(queues)
    for _ in range(messages // batch):
        for index, queue in enumerate(queues):
            started = time.perf_counter()
            leased = queue.lease("bench", batch).messages
            queue.complete("bench", [Completion(m) for m in leased])
            seconds[index] += time.perf_counter() - started
            assert len(leased) == batch, f"{queue.name}: {len(leased)} leased"
    return [messages / spent for spent in seconds]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--drain", type=int, default=5_000)
    args = parser.parse_args()
    groups = {"concurrency": 1}
    with postgres_server() as server, connect(server.create_database("bench")) as database:
        fill(database, "plain", args.rows, None)
        fill(database, "grouped", args.rows, args.keys, groups=groups)
        fill(database, "busy", args.rows, args.keys, groups=groups)
        busy = database.queue("busy")
        while busy.lease("held", 1000).messages:  # the head of every key Leased
            pass
        plans = [
            ("plain", None),
            ("grouped", ONE_AT_A_TIME),
            ("grouped", GroupLease(2, hold=False)),  # the counting form of concurrency > 1
            ("busy", ONE_AT_A_TIME),
        ]
        for name, group in plans:
            shown = f"{name}, concurrency {group.limit}" if group else name
            plan = explain(database, name, group, args.batch)
            print(f"--- {shown}: lease of {args.batch}\n{plan}")
        drained = ("plain", "grouped")
        rates = dict(zip(drained, drain(database, drained, args.drain, args.batch), strict=True))
    for name, rate in rates.items():
        print(f"{name}: {rate:.0f} msg/s draining {args.drain} (lease {args.batch} + complete)")


if __name__ == "__main__":
    main()
