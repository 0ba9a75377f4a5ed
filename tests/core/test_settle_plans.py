"""PostgreSQL finds the rows an outcome batch settles (and the leases a worker extends, checks or
gives back) by their ids, not through the status index nor by reading the whole table.

The statistics of a queue analyzed while nothing was leased see no Leased row, and the status
index keeps an entry for every row leased and settled since, until the next vacuum. A plan that
looks the batch up as "the Leased rows" then reads all of those entries for every batch: the
settle's cost grows with what was drained before it (76 µs of the server's CPU a message after
60,000 instead of 18); and a small table it reads whole for each batch. The statements say
"still leased" in a form no index serves and restrict the ids to the batch's, so the way in is
the primary key. Checked on the statement the settle really sends, with its
parameters, in both of PostgreSQL's plan modes (a prepared statement turns generic).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tablequeue import Completion, Failure, NewMessage, connect
from tablequeue.spec import QueueResource

MESSAGES = 3000
"""Below ~15,000 rows PostgreSQL would read the whole table rather than join by id."""


def _index_names(plan: dict[str, Any]) -> Iterator[str]:
    if "Index Name" in plan:
        yield plan["Index Name"]
    for child in plan.get("Plans", []):
        yield from _index_names(child)


@pytest.mark.parametrize("outcome", ["complete", "fail", "extend", "held", "release"])
def test_statements_on_leased_rows_find_them_by_id(postgres_url: str, outcome: str) -> None:
    with connect(postgres_url) as database:
        database.apply(QueueResource.from_name("orders"))
        queue = database.queue("orders")
        queue.enqueue_many([NewMessage(message={"n": n}) for n in range(MESSAGES)])
        with psycopg.connect(postgres_url, autocommit=True) as connection:
            connection.execute("ANALYZE orders")  # statistics that see no Leased row
        _, batch = queue.settle_and_lease("w", [], 100)
        for _ in range(20):  # 2,000 leased and settled: their status index entries stay
            done = [Completion(message) for message in batch.messages]
            _, batch = queue.settle_and_lease("w", done, 100)

        sent: list[tuple[str, Any]] = []
        original = psycopg.Cursor.execute

        def execute(cursor: psycopg.Cursor[Any], query: Any, params: Any = None, **kw: Any) -> Any:
            sent.append((str(query), params))
            return original(cursor, query, params, **kw)

        psycopg.Cursor.execute = execute  # type: ignore[method-assign,assignment]
        try:
            ids = [message.id for message in batch.messages]
            if outcome == "complete":
                queue.settle("w", [Completion(message) for message in batch.messages])
            elif outcome == "fail":
                queue.settle("w", [Failure(message, "boom") for message in batch.messages])
            else:
                assert getattr(queue, outcome)("w", ids)
        finally:
            psycopg.Cursor.execute = original  # type: ignore[method-assign]
        settling = [(q, p) for q, p in sent if "orders.lease_owner =" in q]
        assert settling, [q[:80] for q, _ in sent]

    with psycopg.connect(postgres_url) as connection:
        for query, params in settling:
            for mode in ("force_custom_plan", "force_generic_plan"):
                connection.execute(f"SET plan_cache_mode = {mode}")
                [[plans]] = connection.execute(
                    "EXPLAIN (FORMAT JSON) " + query, params, prepare=True
                ).fetchall()
                plan = (plans if isinstance(plans, list) else json.loads(plans))[0]["Plan"]
                used = set(_index_names(plan))
                assert "orders_status" not in used, (mode, query[:120], used)
                assert "orders_pkey" in used, (mode, query[:120], used)
