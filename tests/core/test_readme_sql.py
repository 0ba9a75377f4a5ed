"""The ready-made SQL of docs/guides/operating.md ("Operating tablequeue") stays true: every
snippet runs against a real queue table on its engine (SQL Server's are parsed as T-SQL) and
answers its question on known data."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlglot

from tablequeue import Queue, connect
from tablequeue.spec import QueueResource
from tests.support.stored import stored_id

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "operating.md"
_SNIPPET = re.compile(r"```sql\n-- ([a-z]+): ([^\n]+)\n(.*?)```", re.S)
QUESTIONS = ("oldest due message", "errors in the last hour", "messages of one customer")
LIVE = {"postgresql": "postgres_url", "sqlite": "sqlite_url", "mariadb": "mariadb_url"}


def snippets() -> dict[str, dict[str, str]]:
    """{engine: {question: sql}} from the page."""
    found: dict[str, dict[str, str]] = {}
    for engine, question, sql in _SNIPPET.findall(PAGE.read_text()):
        found.setdefault(engine, {})[question] = sql.strip().removesuffix(";")
    return found


def test_every_engine_answers_every_question() -> None:
    found = snippets()
    assert sorted(found) == sorted([*LIVE, "mssql"])
    for engine, questions in found.items():
        assert sorted(questions) == sorted(QUESTIONS), engine


def test_sql_server_snippets_parse_as_t_sql() -> None:
    for question, sql in snippets()["mssql"].items():
        parsed = sqlglot.parse_one(sql, read="tsql")
        table = parsed.find(sqlglot.exp.Table)
        assert table is not None and table.name == "orders", question


def _fill(queue: Queue) -> dict[str, set[int]]:
    """Messages whose answers are known; the expected ids per question."""
    first = stored_id(queue.enqueue({"Customer": {"Id": "C-42"}, "Total": 10}))
    queue.enqueue({"Customer": {"Id": "C-7"}, "Total": 20})
    queue.enqueue({"Customer": {"Id": "C-42"}}, after=3600)  # Sleeping, not due
    failed = stored_id(queue.enqueue({"Customer": {"Id": "C-42"}, "Total": 30}))
    old_error = stored_id(queue.enqueue({"Customer": {"Id": "C-9"}}))
    assert queue.set_status("Error", ids=[failed, old_error]) == 2
    table = queue.table
    with queue.storage.transaction() as connection:
        connection.execute(
            table.update()
            .where(table.c.id == old_error)
            .values(updated_at=datetime.now(UTC) - timedelta(hours=2))
        )
    customer = {m.id for m in queue.messages(limit=100) if m.message["Customer"]["Id"] == "C-42"}
    return {
        "oldest due message": {first},
        "errors in the last hour": {failed},
        "messages of one customer": customer,
    }


@pytest.mark.parametrize("engine", list(LIVE))
def test_readme_sql_answers_its_question(engine: str, request: pytest.FixtureRequest) -> None:
    url = str(request.getfixturevalue(LIVE[engine]))
    with connect(url) as database:
        database.apply(QueueResource.from_name("orders", keep_processed_for="forever"))
        expected = _fill(database.queue("orders"))
        assert len(expected["messages of one customer"]) == 3
        for question, sql in snippets()[engine].items():
            with database.transaction() as connection:
                rows = connection.exec_driver_sql(sql).all()
            assert {row[0] for row in rows} == expected[question], f"{engine}: {question}"
