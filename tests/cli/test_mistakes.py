"""The CLI mistakes of issue 26, as the user sees them: each refused with one line that names the
problem and the fix, or helped ("did you mean")."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tablequeue import Database, connect
from tablequeue.cli import main
from tablequeue.settings.worker import WorkerSettings
from tablequeue.spec import QueueResource
from tests.support.api_server import api_process
from tests.support.ports import free_port
from tests.support.waiting import wait_until


@pytest.fixture
def db(sqlite_url: str) -> Iterator[Database]:
    """A SQLite database with queue orders and its message 1; `run` reaches it by its URL."""
    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("orders"))
        database.queue("orders").enqueue({"n": 1})
        yield database


def run(database: Database, *args: str) -> tuple[int, str]:
    env = {"TABLEQUEUE_DB": database.shown_url}
    result = CliRunner().invoke(main, list(args), env=env)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "args",
    [
        ("set-status", "orders", "Pendng", "--id", "1"),
        ("enqueue", "orders", "{}", "--status", "Pendng"),
        ("queue", "default-status", "orders", "Pendng"),
    ],
    ids=["set-status", "enqueue", "default-status"],
)
def test_a_status_nobody_knows_is_refused_with_the_closest_one(
    db: Database, args: tuple[str, ...]
) -> None:
    assert run(db, *args) == (
        1,
        "error: status 'Pendng' is not a known status and no message of queue 'orders' has it; "
        "did you mean 'Pending'? known: Abandoned, Cancelled, Error, Expired, Pending, Processed, "
        "Sleeping (--new-status sets it anyway)\n",
    )
    queue = db.queue("orders")
    assert queue.count(status="Pendng") == 0 and queue.count() == 1
    assert db.default_status_of("orders") == "Pending"


def test_envelope_lines_statuses_are_checked_too(db: Database, tmp_path: Path) -> None:
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"message": 1}\n{"message": 2, "status": "Erorr"}\n')
    code, output = run(db, "enqueue", "orders", "-f", str(lines), "--envelope")
    assert code == 1 and "status 'Erorr' is not a known status" in output
    assert "did you mean 'Error'?" in output
    assert db.queue("orders").count() == 1


def test_new_status_sets_a_status_of_ones_own_once_then_it_is_known(db: Database) -> None:
    code, output = run(db, "set-status", "orders", "Discarded", "--id", "1")
    assert code == 1 and "(--new-status sets it anyway)" in output
    assert "did you mean" not in output
    assert run(db, "set-status", "orders", "Discarded", "--id", "1", "--new-status") == (
        0,
        "changed\t1\ndryRun\tfalse\n",
    )
    # Held by a message now: no flag needed; the queue's default is known too.
    assert run(db, "enqueue", "orders", "{}", "--status", "Discarded")[0] == 0
    assert run(db, "queue", "default-status", "orders", "Paused", "--new-status")[0] == 0
    assert run(db, "enqueue", "orders", "{}", "--status", "Paused")[0] == 0
    assert run(db, "set-status", "orders", "Pending", "--from", "Discarded")[0] == 0


def test_a_bad_status_is_still_named_invalid_before_unknown(db: Database) -> None:
    code, output = run(db, "set-status", "orders", "x;y", "--id", "1", "--new-status")
    assert code == 1 and output.startswith("error: invalid status 'x;y'")


COMMANDS_WITH_A_QUEUE = [
    ("stats", "ordrs"),
    ("messages", "ordrs"),
    ("show", "ordrs", "1"),
    ("enqueue", "ordrs", "{}"),
    ("set-status", "ordrs", "Pending", "--id", "1"),
    ("purge", "ordrs"),
    ("sweep", "ordrs"),
    ("cancel", "ordrs", "00000000-0000-0000-0000-000000000000"),
    ("schedules", "ordrs"),
    ("workers", "ordrs"),
    ("queue", "pause", "ordrs"),
    ("queue", "resume", "ordrs"),
    ("queue", "delete", "ordrs"),
    ("queue", "default-status", "ordrs", "Pending"),
]


@pytest.mark.parametrize("args", COMMANDS_WITH_A_QUEUE, ids=" ".join)
def test_a_queue_name_one_letter_off_gets_did_you_mean(db: Database, args: tuple[str, ...]) -> None:
    assert run(db, *args) == (
        1,
        f"error: queue 'ordrs' does not exist in {db.shown_url}: did you mean 'orders'?\n",
    )


def test_a_queue_name_like_no_other_keeps_the_advice_to_create_it(db: Database) -> None:
    code, output = run(db, "stats", "zzz")
    assert code == 1
    assert output == (
        f"error: queue 'zzz' does not exist in {db.shown_url}: create it with "
        "`tablequeue queue apply -f FILE`\n"
    )


@pytest.mark.parametrize("command", ["stats orders", "worker orders --handler python:m:f"])
def test_missing_db_names_its_variable(command: str) -> None:
    result = CliRunner().invoke(main, command.split(), env={"TABLEQUEUE_DB": None})
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        "Error: Missing option '--db'. Give --db or set TABLEQUEUE_DB."
    )


def commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield " ".join((*path, name)), command


def test_every_option_of_every_command_has_help_text() -> None:
    missing = [
        f"{name} {'/'.join(param.opts)}"
        for name, command in commands(main)
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden and not param.help
    ]
    assert missing == []


def test_the_worker_takes_the_queue_as_its_argument() -> None:
    usage = CliRunner().invoke(main, ["worker", "--help"], prog_name="tablequeue").output
    assert usage.startswith("Usage: tablequeue worker [OPTIONS] QUEUE\n")
    assert "--queue QUEUE" in usage and "Deprecated: give QUEUE as the argument." in usage
    code, output = worker_run("--db", "sqlite://")
    assert code == 2 and output.splitlines()[-1] == (
        "Error: Missing argument 'QUEUE'. Give it or set TABLEQUEUE_QUEUE."
    )


def worker_run(*args: str) -> tuple[int, str]:
    """A worker refused before it starts."""
    base = ["worker", *args, "--handler", "python:json:dumps", "--port", "0"]
    result = CliRunner().invoke(main, base, env={"TABLEQUEUE_QUEUE": None, "TABLEQUEUE_DB": None})
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("args", "env", "warned"),
    [
        (("idle",), {}, False),
        (("--queue", "idle"), {}, True),
        ((), {"TABLEQUEUE_QUEUE": "idle"}, False),
    ],
    ids=["argument", "deprecated --queue", "TABLEQUEUE_QUEUE"],
)
def test_every_way_of_giving_the_worker_its_queue_reaches_it(
    db: Database, args: tuple[str, ...], env: dict[str, str], warned: bool
) -> None:
    db.apply(QueueResource.from_name("idle"))  # empty: --exit-when-idle stops at once
    options = ["--handler", "python:json:dumps", "--port", "0", "--exit-when-idle"]
    done = subprocess.run(
        [sys.executable, "-m", "tablequeue", "worker", *args, *options],
        env={k: v for k, v in os.environ.items() if not k.startswith("TABLEQUEUE_")}
        | {"TABLEQUEUE_DB": db.shown_url}
        | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"queue": "idle"' in done.stderr  # its log lines name the queue it worked on
    deprecation = "warning: --queue is deprecated: give the queue as the argument\n"
    assert done.stderr.startswith(deprecation) == warned


def test_two_different_queues_for_one_worker_are_refused() -> None:
    code, output = worker_run("orders", "--queue", "mail", "--db", "sqlite://")
    assert code == 1
    assert output.splitlines()[-1] == "error: two queues: 'orders' and --queue 'mail'; give one"


def test_the_operator_still_names_the_queue_by_its_variable() -> None:
    assert "queue" in WorkerSettings.model_fields  # environment() writes TABLEQUEUE_QUEUE


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"a": 1}\n{"a":\n', "on line 2 of {path}: Expecting value at column 6"),
        (
            '{"a": 1,, "b": 2}\n',
            "on line 1 of {path}: Expecting property name enclosed in double quotes at column 9",
        ),
        (
            '{"a": 1}\r\n{"a": 1,}\r\n',
            "on line 2 of {path}: Expecting property name enclosed in double quotes at column 9",
        ),
    ],
    ids=["cut short", "in the middle", "CRLF"],
)
def test_a_bad_jsonl_line_reports_its_line_and_column(
    db: Database, tmp_path: Path, text: str, where: str
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(text.encode())
    code, output = run(db, "enqueue", "orders", "-f", str(path))
    assert (code, output) == (1, f"error: invalid JSON {where.format(path=path)}\n")


def test_a_message_on_several_lines_reports_line_and_column(db: Database) -> None:
    code, output = run(db, "enqueue", "orders", '{"a": 1,\n  "b": x}')
    assert (code, output) == (
        1,
        "error: invalid JSON message: Expecting value at line 2, column 8\n",
    )


def test_tablequeue_api_logs_json_lines(db: Database, tmp_path: Path) -> None:
    with api_process(db.shown_url, tmp_path) as api:
        lines = wait_until(lambda: api.log.read_text().splitlines(), timeout=30)
    records = [json.loads(line) for line in lines]
    assert {"time", "level", "logger", "message"} <= set(records[0])
    assert any("Uvicorn running on" in r["message"] for r in records)


def test_a_second_dev_on_a_taken_port_exits_1_before_starting_anything(tmp_path: Path) -> None:
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        done = subprocess.run(
            [sys.executable, "-m", "tablequeue", "dev", "--folder", "dev", "--port", str(port)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 1
    assert done.stderr == (
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use (is another "
        "tablequeue dev running? give another --port)\n"
    )
    assert not list((tmp_path / "dev").glob("worker-*.log"))  # no worker was started
    assert not (tmp_path / "dev" / "dev.db").exists()


def test_dev_writes_a_gitignore_into_its_folder(tmp_path: Path) -> None:
    port = free_port()
    with socket.socket() as taken:  # stops it right after it made its folder
        taken.bind(("127.0.0.1", port))
        taken.listen()
        result = CliRunner().invoke(
            main, ["dev", "--folder", str(tmp_path / "d"), "--port", str(port)]
        )
    assert result.exit_code == 1
    assert (tmp_path / "d" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_the_dev_folder_is_ignored_by_git() -> None:
    root = Path(__file__).resolve().parents[2]
    assert ".tablequeue-dev/" in (root / ".gitignore").read_text().splitlines()
