"""Bad input gets one clear line naming the problem, and leaves every table exactly as it was."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tablequeue import Database, NewMessage, Queue
from tablequeue.cli import main
from tablequeue.errors import InvalidInput, PredicateError
from tests.support.snapshot import snapshot

MakeQueue = Callable[..., Queue]

HOSTILE = [
    "orders; DROP TABLE orders",
    "orders'--",
    'orders"',
    "orders/*x*/",
    "Ördérs",
    "orders\x00",
    "ORDERS",
    "-orders",
    "a" * 64,
    "",
]


@pytest.fixture
def seeded(make_queue: MakeQueue) -> Queue:
    queue = make_queue()
    queue.enqueue_many([NewMessage(message={"n": n, "Sku": str(n)}) for n in range(5)])
    queue.enqueue({"n": 9}, message_id="held", status="OnHold")
    return queue


def invoke(db_url: str, *args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), input=stdin, env={"TABLEQUEUE_DB": db_url})
    return result.exit_code, result.output


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_queue_names_are_rejected(
    db_url: str, database: Database, seeded: Queue, name: str
) -> None:
    before = snapshot(database)
    with pytest.raises(InvalidInput, match="invalid queue name"):
        database.queue(name)
    code, output = invoke(db_url, "enqueue", "--", name, "{}")
    assert code == 1 and output.startswith("error: invalid queue name")
    assert "Traceback" not in output and output.count("\n") == 1
    assert snapshot(database) == before


@pytest.mark.parametrize(
    "status",
    ["Done; DELETE FROM orders", "x'", "Leased", "", "Ünïcode", "a" * 65, "1abc", "with space"],
)
def test_hostile_statuses_are_rejected(
    db_url: str, database: Database, seeded: Queue, status: str
) -> None:
    before = snapshot(database)
    with pytest.raises(InvalidInput):
        seeded.set_status(status, from_status="Pending")
    if status != "Leased":  # a valid status to select by, just not to set
        with pytest.raises(InvalidInput):
            seeded.set_status("Pending", from_status=status)
    code, output = invoke(db_url, "set-status", "orders", status, "--from", "Pending")
    assert code == 1 and output.startswith("error: ") and "Traceback" not in output
    code, output = invoke(db_url, "enqueue", "orders", "{}", "--status", status)
    assert code == 1 and output.startswith("error: ")
    assert snapshot(database) == before


HOSTILE_PREDICATES = [
    "n == 1; DROP TABLE orders",
    "n == 1 -- comment",
    "n == 1 /* x */",
    "Sku == 'x' OR 1=1",
    'Sku == "x" or 1 == 1',  # parses: 1 is not a path
    "n ==",
    "== 1",
    "",
    "n === 1",
    'n == "unterminated',
    "(n == 1",
    "n < null",
    "n in (1, 2)",
    "message->>'x' == 1",
    "n == 1 and",
    "Product.`Sku` == 1",
]


@pytest.mark.parametrize("text", HOSTILE_PREDICATES)
def test_hostile_predicates_are_rejected(
    db_url: str, database: Database, seeded: Queue, text: str
) -> None:
    before = snapshot(database)
    with pytest.raises(PredicateError, match="predicate"):
        seeded.set_status("Error", where=text)
    code, output = invoke(db_url, "set-status", "orders", "Error", "--where", text)
    assert code == 1 and output.startswith("error: invalid predicate")
    assert output.count("\n") == 1
    assert snapshot(database) == before


@pytest.mark.parametrize(
    "value", ["x'; DROP TABLE orders; --", '" OR "1"="1', "Ünïcødé ✓", 'a\\"b', "%s%s"]
)
def test_hostile_values_are_only_ever_values(database: Database, seeded: Queue, value: str) -> None:
    before = snapshot(database)
    literal = json.dumps(value)
    assert seeded.set_status("Error", where=f"Sku == {literal}") == 0
    assert seeded.messages(where=f"Sku == {literal}") == []
    assert snapshot(database) == before
    stored = seeded.enqueue({"Sku": value}, message_id=value)
    assert seeded.messages(where=f"Sku == {literal}")[0].id == stored.id
    assert seeded.get(stored.id or 0).message_id == value


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("{bad", "invalid JSON message: Expecting property name"),
        ("", "invalid JSON message: Expecting value"),
        ('{"a": NaN}', "not JSON-serializable"),
        ("[1, 2", "invalid JSON message"),
    ],
)
def test_malformed_json_is_rejected(
    db_url: str, database: Database, seeded: Queue, body: str, problem: str
) -> None:
    before = snapshot(database)
    code, output = invoke(db_url, "enqueue", "orders", body)
    assert code == 1 and problem in output and output.count("\n") == 1
    assert snapshot(database) == before


def test_a_bad_line_in_a_batch_rejects_the_whole_batch(
    db_url: str, database: Database, seeded: Queue, tmp_path: Path
) -> None:
    before = snapshot(database)
    batch = tmp_path / "batch.jsonl"
    batch.write_text('{"n": 100}\n{"n": 101}\n{"n": oops}\n')
    code, output = invoke(db_url, "enqueue", "orders", "-f", str(batch))
    assert code == 1 and "on line 3 of" in output
    assert snapshot(database) == before


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (["--at", "tomorrow"], "--at: invalid time"),
        (["--at", "2026-01-01T00:00:00"], "needs a zone"),
        (["--after", "soon"], "--after: invalid duration"),
        (["--priority", "99999"], "priority"),
        (["--header", "novalue"], "use KEY=VALUE"),
        (["--at", "2026-01-01T00:00Z", "--after", "5m"], "either 'at' or 'after'"),
    ],
)
def test_bad_enqueue_options(
    db_url: str, database: Database, seeded: Queue, options: list[str], problem: str
) -> None:
    before = snapshot(database)
    code, output = invoke(db_url, "enqueue", "orders", "{}", *options)
    assert code == 1 and problem in output, output
    assert snapshot(database) == before


def test_unknown_queue_and_bad_urls(db_url: str, database: Database, seeded: Queue) -> None:
    code, output = invoke(db_url, "stats", "nope")
    assert code == 1 and "queue 'nope' does not exist" in output
    code, output = invoke("postgresql://ann:s3cret@127.0.0.1:1/db", "stats", "orders")
    assert code == 1 and output.startswith("error: cannot connect to postgresql://ann:***@")
    assert "s3cret" not in output and output.count("\n") == 1
    code, output = invoke("mysql+foo://a:b@c/d", "stats", "orders")
    assert code == 1 and "unsupported database URL scheme" in output
    code, output = invoke("sqlite:///no/such/dir/x.db", "stats", "orders")
    assert code == 1 and "cannot connect to sqlite:///no/such/dir/x.db" in output


def test_the_installed_command_prints_no_traceback(db_url: str, seeded: Queue) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tablequeue", "set-status", "orders", "x;y", "--id", "1"],
        env={"TABLEQUEUE_DB": db_url, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("error: invalid status 'x;y': use 1-64 letters")
    assert result.stderr.count("\n") == 1
