"""SQL Server's statements, checked without a server: every golden statement of the dialect
parses as T-SQL (sqlglot's `tsql` dialect) into the statement it should be, and predicates
compile to T-SQL that parses. (With TABLEQUEUE_TEST_MSSQL_URL set, the conformance suite also
runs against that server.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlalchemy as sa
import sqlglot
from sqlglot import expressions as exp

from tablequeue.predicate import parse, to_sql
from tablequeue.storage import Storage
from tests.core.sql_layout import normalized

GOLDEN = Path(__file__).parent / "golden" / "mssql"
EXPECTED = {
    # spec.indexes: a computed column, then an index on it; dropped the other way round.
    "json_index_create_boolean_0": exp.Alter,
    "json_index_create_number_0": exp.Alter,
    "json_index_create_string_0": exp.Alter,
    "json_index_create": exp.Create,
    "json_index_drop_0": exp.Drop,
    "json_index_drop_1": exp.Alter,
    "json_index_select_where": exp.Select,
    "create": exp.Create,
    "lease": exp.Update,
    "extend": exp.Update,
    "held": exp.Select,
    "release": exp.Update,
    "insert_new": exp.Insert,
    "upsert": exp.Merge,
    "delete_done": exp.Delete,
    "mark_processed": exp.Update,
    "reschedule": exp.Update,
    "fail": exp.Update,
    "requeue": exp.Update,
    "sweep": exp.Update,
    "expire": exp.Update,
    "backlog": exp.Select,
    "due": exp.Select,
    "load": exp.Select,
    "count_by_status": exp.Select,
    "dedupe_left_rows": exp.Select,
    "adopt_escaped_bodies": exp.Update,
    "readable_json_escaped_rows": exp.Select,
    "readable_json_rewrite": exp.Update,
    "history_settled_rows": exp.Select,
    "history_present_ids": exp.Select,
    "history_forget_results": exp.Delete,
    "history_trim_attempts": exp.Delete,
    "history_write": exp.Insert,
    "rollup_accumulate": exp.Merge,
    "schedules_due": exp.Select,
    "schedule_claim": exp.Update,
    "lock_bucket": exp.Select,
    "take_tokens": exp.Update,
    "lock_concurrency": exp.Select,
    "count_leased": exp.Select,
    "subscriptions_add": exp.Alter,
    "subscriptions_publish": exp.Select,
    "subscriptions_expired_keys": exp.Select,
}


def _tsql(text: str) -> exp.Expression:
    # An expanding IN list is rendered by SQLAlchemy at execution; here it is one parameter.
    text = re.sub(r"__\[POSTCOMPILE_\w+\]", "?", text)
    [statement] = sqlglot.parse(text, read="tsql", error_level=sqlglot.ErrorLevel.RAISE)
    assert isinstance(statement, exp.Expression)
    return statement


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.sql")), ids=lambda p: p.stem)
def test_every_golden_statement_parses_as_tsql(path: Path) -> None:
    statement = _tsql(path.read_text())
    kind = next(kind for prefix, kind in EXPECTED.items() if path.stem.startswith(prefix))
    assert isinstance(statement, kind), f"{path.stem} parsed as {type(statement).__name__}"


def test_the_lease_locks_only_the_rows_it_takes() -> None:
    lease = normalized((GOLDEN / "lease.sql").read_text())  # laid out one clause a line
    assert "WITH (UPDLOCK, ROWLOCK, READPAST)" in lease and "SELECT TOP (?)" in lease
    assert "OUTPUT inserted.id" in lease and "ORDER BY orders.priority DESC" in lease


def test_identities_are_merged_under_holdlock() -> None:
    merge = normalized((GOLDEN / "upsert_by_message_id_idempotent.sql").read_text())
    assert merge.startswith("MERGE INTO orders WITH (HOLDLOCK) USING")
    assert "WHEN MATCHED AND CAST(orders.message AS VARBINARY(max))" in merge


@pytest.mark.parametrize(
    "text",
    [
        'Product.Sku == "123"',
        "Items[0].Qty >= 2",
        '["odd key"] != null',
        'Paid == true and (Total > 100 or Country == "NO")',
        "not Missing == null",
    ],
)
def test_predicates_compile_to_tsql(text: str) -> None:
    storage = Storage("mssql+pyodbc://golden")  # never connects
    try:
        table = storage.table("orders")
        query = sa.select(table.c.id).where(to_sql(parse(text), table.c.message, storage.dialect))
        compiled = str(query.compile(dialect=storage.engine.dialect))
    finally:
        storage.close()
    # T-SQL has no boolean values: each comparison is made two-valued by a CASE.
    assert "CASE WHEN" in compiled and "false" not in compiled.lower()
    assert isinstance(_tsql(compiled), exp.Select)
