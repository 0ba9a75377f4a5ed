"""Defects found from outside (issue 17): names ending in a newline, JSON the CLI must refuse in
one line, and passwords given as URL query parameters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tablequeue import Database, Queue, connect, names
from tablequeue.cli import main
from tablequeue.errors import InvalidInput
from tablequeue.storage.urls import shown_url
from tests.support.snapshot import snapshot

MakeQueue = Callable[..., Queue]


def invoke(db_url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env={"TABLEQUEUE_DB": db_url})
    return result.exit_code, result.output


def one_error_line(code: int, output: str) -> None:
    assert code == 1 and output.startswith("error: "), output
    assert "Traceback" not in output and output.count("\n") == 1, output


@pytest.mark.parametrize(
    ("check", "valid"),
    [
        (names.queue_name, "orders"),
        (names.table_name, "orders"),
        (names.status, "Pending"),
        (names.settable_status, "Pending"),
    ],
)
@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r", " ", "\x00"])
def test_a_name_with_a_trailing_line_break_is_refused(
    check: Callable[[str], str], valid: str, ending: str
) -> None:
    assert check(valid) == valid
    with pytest.raises(InvalidInput):
        check(valid + ending)


def test_a_status_ending_in_a_newline_is_refused_by_the_cli(
    db_url: str, database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue("orders")
    queue.enqueue({"n": 1})
    before = snapshot(database)
    one_error_line(*invoke(db_url, "set-status", "orders", "Pending\n", "--from", "Pending"))
    one_error_line(*invoke(db_url, "set-status", "orders", "Error", "--from", "Pending\n"))
    one_error_line(*invoke(db_url, "queue", "default-status", "orders", "Pending\n"))
    one_error_line(*invoke(db_url, "enqueue", "orders", "{}", "--status", "Pending\n"))
    one_error_line(*invoke(db_url, "stats", "orders\n"))
    assert snapshot(database) == before


def test_a_queue_resource_named_with_a_newline_creates_nothing(
    db_url: str, database: Database, tmp_path: Path
) -> None:
    resource = tmp_path / "queue.yaml"
    resource.write_text(
        'apiVersion: tablequeue.dev/v1\nkind: Queue\nmetadata:\n  name: "orders\\n"\nspec: {}\n'
    )
    code, output = invoke(db_url, "queue", "apply", "-f", str(resource))
    one_error_line(code, output)
    assert "invalid queue name" in output
    assert database.queues() == []


def test_a_table_name_with_a_newline_creates_nothing(
    db_url: str, database: Database, tmp_path: Path
) -> None:
    resource = tmp_path / "queue.yaml"
    resource.write_text(
        "apiVersion: tablequeue.dev/v1\nkind: Queue\nmetadata:\n  name: orders\nspec:\n"
        '  table: "orders\\n"\n'
    )
    code, output = invoke(db_url, "queue", "apply", "-f", str(resource))
    one_error_line(code, output)
    assert "invalid table name" in output
    assert database.queues() == []


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"n": ' + b"9" * 5000 + b"}\n", "more than 4300 digits"),
        (b"[" * 100_000 + b"]" * 100_000 + b"\n", "nested too deeply"),
        (b'{"n": 1}\n{"s": "\xff\xfe"}\n', "not UTF-8 text"),
    ],
    ids=["huge-integer", "deep-nesting", "invalid-utf8"],
)
def test_json_files_the_cli_cannot_read_give_one_error_line(
    db_url: str,
    database: Database,
    make_queue: MakeQueue,
    tmp_path: Path,
    content: bytes,
    problem: str,
) -> None:
    make_queue("orders")
    before = snapshot(database)
    batch = tmp_path / "batch.jsonl"
    batch.write_bytes(content)
    code, output = invoke(db_url, "enqueue", "orders", "-f", str(batch))
    one_error_line(code, output)
    assert problem in output
    assert snapshot(database) == before


def test_a_huge_integer_in_a_json_argument_gives_one_error_line(
    db_url: str, database: Database, make_queue: MakeQueue
) -> None:
    make_queue("orders")
    code, output = invoke(db_url, "enqueue", "orders", '{"n": ' + "9" * 5000 + "}")
    one_error_line(code, output)
    assert "more than 4300 digits" in output
    assert database.queue("orders").count() == 0


SECRET = "s3cretQueryPw"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://ann:{SECRET}@127.0.0.1:1/db",
        f"postgresql://ann@127.0.0.1:1/db?password={SECRET}",
        f"postgresql://ann@127.0.0.1:1/db?sslmode=disable&PASSWORD={SECRET}",
        f"postgresql+psycopg://ann@127.0.0.1:1/db?password={SECRET}&password={SECRET}",
        f"mssql+pyodbc:///?odbc_connect=DRIVER%3D%7BX%7D%3BServer%3Dh%3BPWD%3D{SECRET}%3BUID%3Da",
        f"mssql+pyodbc:///?odbc_connect=Driver={{X}};Server=h;Password={{{SECRET}}};Uid=a",
    ],
)
def test_shown_urls_never_contain_a_password(url: str) -> None:
    shown = shown_url(url)
    assert SECRET not in shown and "***" in shown, shown


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://ann@127.0.0.1:1/db?password={SECRET}",
        f"postgresql://ann:{SECRET}@127.0.0.1:1/db",
    ],
)
def test_the_cli_never_prints_a_password_of_a_url(url: str) -> None:
    code, output = invoke(url, "stats", "orders")
    one_error_line(code, output)
    assert output.startswith("error: cannot connect to postgresql://ann")
    assert SECRET not in output


@pytest.mark.parametrize(
    ("name", "owner"),
    [
        ("pg_class", "PostgreSQL"),
        ("pg_authid", "PostgreSQL"),
        ("pg_settings", "PostgreSQL"),
        ("pg_roles", "PostgreSQL"),
        ("sqlite_master", "SQLite"),
    ],
)
def test_a_table_named_like_an_engine_catalog_is_refused_with_the_reason(
    postgres_url: str, tmp_path: Path, name: str, owner: str
) -> None:
    """Issue 29: `spec.table: pg_class` (or a queue named `pg-class`) was not refused."""
    with connect(postgres_url) as database:
        before = snapshot(database)
        for queue, spec in (
            ("orders", f"table: {name}"),
            (name.replace("_", "-"), "category: Ops"),
        ):
            resource = tmp_path / "queue.yaml"
            resource.write_text(
                "apiVersion: tablequeue.dev/v1\nkind: Queue\nmetadata:\n"
                f"  name: {queue}\nspec: {{{spec}}}\n"
            )
            code, output = invoke(postgres_url, "queue", "apply", "-f", str(resource))
            one_error_line(code, output)
            assert f"invalid table name '{name}'" in output and owner in output, output
        assert snapshot(database) == before
