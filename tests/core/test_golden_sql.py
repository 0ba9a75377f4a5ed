"""Golden SQL: every statement of a queue table, rendered per engine, kept where a DBA reads it.

`tests/core/golden/<engine>/<statement>.sql` holds the text each engine's driver receives for
the table `orders`: the DDL (tables, indexes) and every named builder of
`tablequeue/dialects/queries/`, with bind parameters as the driver's placeholders (`%(b_n)s`,
`?`; an expanding list shows as `__[POSTCOMPILE_b_ids]`). Paste one into EXPLAIN with values.
The files are laid out one clause a line (`tests/core/sql_layout.py`), by changing only the
whitespace between tokens; the test compares the laid-out text and, so that a layout bug cannot
hide a change, the rendered text itself with its whitespace normalized.

The test fails when a rendering changes unnoticed, when a statement has no golden file, or a
golden file no statement. After a deliberate change, rewrite them and review the diff:

    TABLEQUEUE_UPDATE_GOLDEN=1 .venv/bin/pytest tests/core/test_golden_sql.py

Nothing connects: each engine's SQLAlchemy dialect compiles the statements (a new engine in
`tablequeue.dialects.DIALECTS` is covered by the same test, once its files are written).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tablequeue import indexes, predicate
from tablequeue.dialects import DIALECTS, GroupLease
from tablequeue.dialects.queries import Queries
from tablequeue.dialects.queries.history import HistoryQueries
from tablequeue.models import Heartbeat
from tablequeue.rollup import MinuteCounts, rollup_table
from tablequeue.rollup.table import ADDED_UP, LARGEST, LATEST
from tablequeue.spec import QueueSpec
from tablequeue.storage import Storage, readable_json, schedules, subscriptions
from tablequeue.storage.schedules import ScheduleState
from tablequeue.storage.workers import heartbeat_statement
from tests.core.sql_layout import layout, normalized

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("TABLEQUEUE_UPDATE_GOLDEN") == "1"
TABLE = "orders"

QUERIES: dict[str, Callable[[Queries], Any]] = {
    "lease": lambda q: q.lease(),
    "extend": lambda q: q.extend(),
    "held": lambda q: q.held(),
    "release": lambda q: q.release(),
    "release_untracked": lambda q: q.release_untracked(),
    "lease_limited": lambda q: q.lease(rate_limited=True),
    "lock_bucket": lambda q: q.lock_bucket(),
    "take_tokens": lambda q: q.take_tokens(),
    "lease_capped": lambda q: q.lease(concurrency_limited=True),
    "lease_capped_limited": lambda q: q.lease(rate_limited=True, concurrency_limited=True),
    "lock_concurrency": lambda q: q.lock_concurrency(),
    "count_leased": lambda q: q.count_leased(),
    "lease_grouped": lambda q: q.lease(group=GroupLease(1, hold=False)),
    "lease_grouped_hold": lambda q: q.lease(group=GroupLease(1, hold=True)),
    "lease_grouped_counted": lambda q: q.lease(
        concurrency_limited=True, group=GroupLease(3, hold=False)
    ),
    "insert_new": lambda q: q.insert_new()[0],
    "upsert_by_message_id": lambda q: q.upsert_by_message_id(idempotent=False)[0],
    "upsert_by_message_id_idempotent": lambda q: q.upsert_by_message_id(idempotent=True)[0],
    "upsert_by_message_id_keep": lambda q: q.upsert_by_message_id(False, "keep")[0],
    "upsert_by_message_id_window": lambda q: q.upsert_by_message_id(False, "window")[0],
    "upsert_by_message_id_window_idempotent": lambda q: q.upsert_by_message_id(True, "window")[0],
    "dedupe_left_rows_keep": lambda q: q.left_rows("keep"),
    "dedupe_left_rows_window": lambda q: q.left_rows("window"),
    "delete_done": lambda q: q.delete_done()[0],
    "mark_processed": lambda q: q.mark_processed()[0],
    "reschedule": lambda q: q.reschedule()[0],
    "fail": lambda q: q.fail()[0],
    "requeue_newer_version_after_completion": lambda q: q.requeue_newer_version(
        "Pending", completed=True
    )[0],
    "requeue_newer_version_after_failure": lambda q: q.requeue_newer_version(
        "Pending", completed=False
    )[0],
    "requeue_newer_version_to_held_status": lambda q: q.requeue_newer_version(
        "OnHold", completed=True
    )[0],
    "sweep_lapsed_leases_abandon": lambda q: q.sweep_lapsed_leases("Abandon", 3),
    "sweep_lapsed_leases_retry": lambda q: q.sweep_lapsed_leases("Retry", 3),
    "expire": lambda q: q.expire(),
    "backlog": lambda q: q.backlog(),
    "due": lambda q: q.due(),
    "load": lambda q: q.load(),
    "count_by_status": lambda q: q.count_by_status(),
}


JSON_INDEXES = [
    {"path": "Product.Sku"},
    {"path": 'Items[0]["unit price"]', "type": "number"},
    {"path": "Paid", "type": "boolean"},
]
INDEXED_PREDICATE = 'Product.Sku == "123" and Items[0]["unit price"] > 2 and Paid == true'


def json_index_statements(storage: Storage, table: sa.Table) -> dict[str, Any]:
    """`spec.indexes`: creating and dropping each kind, and a predicate that uses them."""
    specs = QueueSpec.model_validate({"indexes": JSON_INDEXES}).indexes
    strategy = storage.dialect.json_indexes
    statements: dict[str, Any] = {}
    resolved = indexes.resolve(table.name, specs)
    for index in resolved:
        for n, text in enumerate(strategy.create_statements(storage.engine, table.name, index)):
            statements[f"json_index_create_{index.kind}_{n}"] = text
    for n, text in enumerate(
        strategy.drop_statements(storage.engine, table.name, resolved[0].name)
    ):
        statements[f"json_index_drop_{n}"] = text
    lookup = indexes.lookup(storage.engine, storage.dialect, table, specs)
    where = predicate.to_sql(
        predicate.parse(INDEXED_PREDICATE), table.c.message, storage.dialect, lookup
    )
    statements["json_index_select_where"] = sa.select(table.c.id).where(where)
    return statements


def rollup_statements(storage: Storage) -> dict[str, Any]:
    """The chart rollup's table, its index and the upsert every worker's write runs."""
    rollup = rollup_table(storage.metadata)
    row = MinuteCounts().row("orders", datetime(2026, 1, 1, tzinfo=UTC), 0)
    upsert = storage.dialect.accumulate(rollup, row, add=ADDED_UP, largest=LARGEST, latest=LATEST)
    statements: dict[str, Any] = {
        "create_rollup": sa.schema.CreateTable(rollup),
        "rollup_accumulate": upsert,
    }
    for index in rollup.indexes:
        statements[f"create_index_{index.name}"] = sa.schema.CreateIndex(index)
    return statements


def schedule_statements(storage: Storage) -> dict[str, Any]:
    """The schedules' table, the read of due ticks and the claim (the exactly-once guard)."""
    table = storage.schedules
    at = datetime(2026, 1, 1, tzinfo=UTC)
    state = ScheduleState("orders", "nightly", "0 2 * * *", "UTC", at, None, None, None, 0, 0)
    return {
        "create_schedules": sa.schema.CreateTable(table),
        "schedules_due": schedules.due_statement(table, "orders", at),
        "schedule_claim": schedules.claim_statement(
            table, state, next_tick=at, fired_tick=at, skipped=0, now=at
        ),
    }


def subscription_statements(storage: Storage) -> dict[str, Any]:
    """The subscriptions' table, the columns apply adds to an older one, publishing's read of
    a topic's current subscribers and housekeeping's choice of expired ones."""
    table, sql_dialect = storage.subscriptions, storage.engine.dialect
    expired = subscriptions.expired(table, storage.dialect, "orders")
    statements: dict[str, Any] = {
        "create_subscriptions": sa.schema.CreateTable(table),
        "subscriptions_publish": subscriptions.subscribers_statement(storage, "order-placed"),
        "subscriptions_expired_keys": sa.select(table.c.topic).where(expired).limit(5000),
    }
    for name in ("origin", "expires_at"):
        text = subscriptions.add_column_sql(table.c[name], sql_dialect)
        statements[f"subscriptions_add_{name}"] = text
    return statements


def render(engine: str) -> dict[str, str]:
    """Every statement's text on `engine`, by golden file name (without `.sql`)."""
    storage = Storage(DIALECTS[engine].url_hint + "golden")  # never connects
    try:
        table = storage.table(TABLE)
        queries = storage.queries(table)
        statements: dict[str, Any] = {
            "create_registry": sa.schema.CreateTable(storage.registry),
            "create_rate_limits": sa.schema.CreateTable(storage.rate_limits),
            "create_table": sa.schema.CreateTable(table),
        }
        for index in table.indexes:
            statements[f"create_index_{index.name}"] = sa.schema.CreateIndex(index)
        statements["create_workers"] = sa.schema.CreateTable(storage.workers_table)
        for index in storage.workers_table.indexes:
            statements[f"create_index_{index.name}"] = sa.schema.CreateIndex(index)
        statements["upsert_worker_heartbeat"] = heartbeat_statement(
            storage, Heartbeat("pod-1-abc123", "orders", "pod-1", 7, "0.1.0", 5.0)
        )
        for name, build in QUERIES.items():
            statements[name] = build(queries)
        for shared in storage.history.all():
            statements[f"create_{shared.name}"] = sa.schema.CreateTable(shared)
            for index in shared.indexes:
                statements[f"create_index_{index.name}"] = sa.schema.CreateIndex(index)
        history = HistoryQueries(storage.dialect, queries, storage.history)
        statements.update(
            {
                "history_settled_rows": history.settled_rows(),
                "history_present_ids": history.present_ids(),
                "history_write_results": history.write_results()[0],
                "history_forget_results": history.forget_results(),
                "history_write_attempts": history.write_attempts(),
                "history_trim_attempts": history.trim_attempts(),
            }
        )
        if storage.dialect.capabilities.enqueues_in_autocommit:  # one message, scalar parameters
            statements["insert_one"] = queries.insert_one()
            statements["upsert_one"] = queries.upsert_one(idempotent=False)
            statements["upsert_one_idempotent"] = queries.upsert_one(idempotent=True)
            statements["upsert_one_keep"] = queries.upsert_one(False, "keep")
            statements["upsert_one_window"] = queries.upsert_one(False, "window")
        if storage.dialect.capabilities.stores_json_text:  # readable JSON (schema version 5)
            statements["adopt_escaped_bodies"] = queries.adopt_escaped_bodies()[0]
            statements["readable_json_escaped_rows"] = readable_json.escaped_rows(
                storage.dialect, table
            )
            statements["readable_json_rewrite_message"] = readable_json.rewrite_value(
                storage.dialect, table, "message"
            )
        if storage.dialect.capabilities.folds_writes:
            statements["history_delete_done_and_record"] = history.finish_and_record(True)[0]
            statements["history_mark_processed_and_record"] = history.finish_and_record(False)[0]
        statements.update(rollup_statements(storage))
        statements.update(schedule_statements(storage))
        statements.update(subscription_statements(storage))
        extra_statements = getattr(queries, "extra_statements", None)  # an engine's own
        if extra_statements is not None:
            statements.update(extra_statements())
        sql_dialect = storage.engine.dialect
        statements.update(json_index_statements(storage, table))
        return {
            name: (
                statement
                if isinstance(statement, str)
                else str(statement.compile(dialect=sql_dialect))
            )
            .strip()
            .removesuffix(";")
            + ";\n"
            for name, statement in statements.items()
        }
    finally:
        storage.close()


@pytest.mark.parametrize("engine", sorted(DIALECTS))
def test_rendered_sql_matches_the_golden_files(engine: str) -> None:
    folder = GOLDEN / engine
    rendered = render(engine)
    if UPDATE:
        folder.mkdir(parents=True, exist_ok=True)
        for stale in set(folder.glob("*.sql")) - {folder / f"{n}.sql" for n in rendered}:
            stale.unlink()
        for name, text in rendered.items():
            (folder / f"{name}.sql").write_text(layout(text))
    kept = {path.stem: path.read_text() for path in folder.glob("*.sql")}
    hint = "deliberate? rewrite with scripts/regenerate and review the diff"
    assert sorted(kept) == sorted(rendered), f"statements added or removed: {hint}"
    # Token for token: the SQL the driver receives, whitespace aside, is the file's.
    changed = [name for name in rendered if normalized(rendered[name]) != normalized(kept[name])]
    assert not changed, f"{engine} rendering changed for {changed}: {hint}"
    # And the file is laid out as the layout lays it out (so a re-layout shows in a diff).
    relaid = [name for name in rendered if layout(rendered[name]) != kept[name]]
    assert not relaid, f"{engine} golden files laid out differently: {relaid}: {hint}"


def test_the_layout_changes_only_whitespace() -> None:
    sql = (
        "UPDATE t SET a=1, b='x,  y' WHERE t.id IN (SELECT t.id \nFROM t "
        "WHERE t.s = 'FROM  a' AND t.n > 1 ORDER BY t.id LIMIT ? FOR UPDATE SKIP LOCKED) "
        "RETURNING t.id;\n"
    )
    assert layout(sql) == (
        "UPDATE t\n"
        "SET a=1,\n"
        "    b='x,  y'\n"
        "WHERE t.id IN (SELECT t.id\n"
        "    FROM t\n"
        "    WHERE t.s = 'FROM  a'\n"
        "      AND t.n > 1\n"
        "    ORDER BY t.id\n"
        "    LIMIT ?\n"
        "    FOR UPDATE SKIP LOCKED)\n"
        "RETURNING t.id;\n"
    )
    assert normalized(layout(sql)) == normalized(sql)
    assert sql.split() == layout(sql).split()  # what `git diff --word-diff` compares
    assert normalized("a  'x  y'") != normalized("a 'x y'")  # quotes keep their spaces
    # An OR beside the ANDs: they stay on one line, so the layout never suggests other groups.
    assert layout("SELECT 1 FROM t WHERE a AND b OR c AND (d OR e)") == (
        "SELECT 1\nFROM t\nWHERE a AND b OR c AND (d OR e)"
    )
    assert (
        layout("SELECT 1 FROM t WHERE a AND (b OR c)")
        == "SELECT 1\nFROM t\nWHERE a\n  AND (b OR c)"
    )


def test_rendering_is_deterministic() -> None:
    for engine in DIALECTS:
        assert render(engine) == render(engine)
