"""One output style for every command (cli/output.py): the columns of its table are exactly the
keys of its `--json` output. Piped, tab-separated values, one line per row; on a terminal, rich
tables that fit its width, a long custom status included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tablequeue import Failure, connect
from tablequeue.cli import main
from tablequeue.spec import QueueResource

from . import tsv
from .terminal import plain_lines, run_in_terminal

LONG_STATUS = "WaitingForTheWarehouseToConfirmEveryLineOfTheOrderBeforeShipping"
QUEUES = """\
apiVersion: tablequeue.dev/v1
kind: Queue
metadata: {name: orders}
spec:
  maxAttempts: 3
  schedules: [{name: nightly, cron: "0 2 * * *", message: {n: 1}}]
  subscriptions: [{topic: order-placed}]
"""


@pytest.fixture
def db(tmp_path: Path) -> str:
    """Queue orders: message 1 with a tab and a line break in its body and a failed attempt,
    message 2 in a long custom status."""
    (tmp_path / "queues.yaml").write_text(QUEUES)
    url = f"sqlite:///{tmp_path / 'queues.db'}"
    with connect(url) as database:
        database.apply(QueueResource.from_name("orders"))
        queue = database.queue("orders")
        queue.enqueue({"note": "one\ttab\nand a line"}, message_id="A-1")
        [leased] = queue.lease("worker-a", 1).messages
        queue.fail("worker-a", [Failure(leased, "SMTP timeout\nTraceback ...")])
        queue.enqueue({"n": 2}, status=LONG_STATUS)
    return url


def run(db: str, *args: str) -> Any:
    result = CliRunner().invoke(main, list(args), env={"TABLEQUEUE_DB": db})
    assert result.exit_code == 0, result.output
    return result


def shown(value: Any) -> str:
    """A JSON value as its cell reads: strings as they are, null empty, the rest as JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


VOLATILE = {"trackingId", "pausedAt", "oldestPendingSeconds", "secondsSinceSeen"}
"""Values that differ between two runs of the same command (a new message, a new pause)."""


def stable(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: "..." if key in VOLATILE else value for key, value in fields.items()}


def records(data: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [stable({key: shown(value) for key, value in item.items()}) for item in data]


TRACKING = "TRACKING"  # replaced by message 1's tracking id
COMMANDS = [
    ("queue", "list"),
    ("queue", "apply", "-f", "queues.yaml"),
    ("messages", "orders"),
    ("show", "orders", "1"),
    ("job", TRACKING),
    ("stats", "orders"),
    ("workers",),
    ("schedules", "orders"),
    ("set-status", "orders", "Pending", "--id", "1", "--dry-run"),
    ("enqueue", "orders", '{"n": 3}'),
    ("publish", "order-placed", '{"n": 4}'),
    ("purge", "orders", "--status", "Cancelled"),
    ("sweep", "orders"),
    ("queue", "pause", "orders"),
    ("queue", "default-status", "orders", "Pending"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_piped_output_is_the_json_as_tab_separated_values(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    monkeypatch.chdir(tmp_path)
    with connect(db) as database:
        tracking = str(database.queue("orders").get(1).tracking_id)
    args = tuple(tracking if a == TRACKING else a for a in args)
    before = Path(db.removeprefix("sqlite:///")).read_bytes()
    text = run(db, *args).stdout
    Path(db.removeprefix("sqlite:///")).write_bytes(before)  # --json sees the same data
    data = json.loads(run(db, *args, "--json").stdout)
    if isinstance(data, list):
        assert [stable(row) for row in tsv.rows(text)] == records(data)
        return
    tables = {k: v for k, v in data.items() if isinstance(v, list) and v and isinstance(v[0], dict)}
    expected = {k: shown(v) for k, v in data.items() if k not in tables}
    assert stable(tsv.pairs(text)) == stable(expected)
    for key, items in tables.items():
        assert [stable(row) for row in tsv.section(text, key)] == records(items)


def test_a_value_with_tabs_and_line_breaks_stays_on_its_line(db: str) -> None:
    rows = run(db, "messages", "orders").stdout.split("\n")
    assert len(rows) == 4 and rows[-1] == ""  # header, two messages, the final line break
    assert '{"note": "one\\\\ttab\\\\nand a line"}' in rows[1]
    error = tsv.section(run(db, "show", "orders", "1").stdout, "attemptHistory")[0]["error"]
    assert error == "SMTP timeout\nTraceback ..."


def test_an_empty_list_prints_its_note_on_stderr_only(db: str) -> None:
    result = run(db, "messages", "orders", "--status", "Cancelled")
    assert (result.stdout, result.stderr) == ("", "no messages\n")


def test_a_terminal_gets_a_table_of_the_json_keys(db: str, tmp_path: Path) -> None:
    code, output = run_in_terminal(["queue", "list"], db, tmp_path, columns=120)
    assert code == 0, output
    lines = [line.strip() for line in plain_lines(output) if line.strip()]
    keys = list(json.loads(run(db, "queue", "list", "--json").stdout)[0])
    assert lines[0].split() == keys
    assert lines[2].split()[:5] == ["orders", "orders", "Default", "Pending", "false"]


@pytest.mark.parametrize("command", [["messages", "orders"], ["stats", "orders"]])
def test_a_long_custom_status_wraps_inside_the_terminal(
    db: str, tmp_path: Path, command: list[str]
) -> None:
    code, output = run_in_terminal(command, db, tmp_path, columns=60)
    assert code == 0, output
    lines = plain_lines(output)
    assert max(len(line) for line in lines) <= 60, "\n".join(lines)
    # Folded inside its cell: its start, then the rest on the next lines at the same place.
    first = next(i for i, line in enumerate(lines) if "WaitingFor" in line)
    column = lines[first].index("WaitingFor")
    column -= lines[first][column - 1] == '"'  # the cell starts at the JSON string's quote
    cell = "".join(line[column:].split(" ")[0] for line in lines[first : first + 4])
    assert LONG_STATUS in cell.replace('"', ""), "\n".join(lines)
