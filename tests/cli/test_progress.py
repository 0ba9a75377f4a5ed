"""Progress bars: shown on a terminal (a real pseudo-terminal), absent from pipes and --json."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tablequeue import connect
from tablequeue.spec import QueueResource

from . import tsv
from .terminal import CLI, environment, plain_lines, run_in_terminal

ROWS = 5_000


@pytest.fixture
def jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "orders.jsonl"
    path.write_text("".join(json.dumps({"OrderId": f"A-{n}"}) + "\n" for n in range(ROWS)))
    return path


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'queues.db'}"
    with connect(url) as database:
        database.apply(QueueResource.from_name("orders"))
    return url


def test_enqueue_of_a_file_shows_progress_on_a_terminal(
    jsonl: Path, db: str, tmp_path: Path
) -> None:
    # The file by its name in the working folder: a long temporary path would wrap the
    # progress line on the 120-column terminal and split the text looked for.
    code, output = run_in_terminal(["enqueue", "orders", "-f", jsonl.name], db, jsonl.parent)
    assert code == 0, output
    assert f"reading {jsonl.name}" in output
    assert "━" in output  # rich's bar
    assert f"enqueueing {ROWS:,} messages" in output
    # Then what --json prints, a row per message: tab-separated, as more than 1,000 rows are.
    assert "id\ttrackingId\tmessageId\toutcome\tstatus\tversion\r\n" in output
    for first_and_last in (1, ROWS):
        assert re.search(rf"\n{first_and_last}\t[0-9a-f-]{{36}}\t\tinserted\tPending\t1\r", output)
    code, output = run_in_terminal(["purge", "orders", "--status", "Pending"], db, tmp_path)
    assert code == 0 and "deleting finished messages" in output
    assert re.search(rf"^ *deleted +{ROWS} *$", "\n".join(plain_lines(output)), re.M), output


def test_pipes_and_json_get_no_progress(jsonl: Path, db: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [*CLI, "enqueue", "orders", "-f", str(jsonl)],
        capture_output=True,
        text=True,
        env=environment(db),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0
    rows = tsv.rows(done.stdout)
    assert len(rows) == ROWS and {row["outcome"] for row in rows} == {"inserted"}
    assert done.stderr == ""
    code, output = run_in_terminal(
        ["set-status", "orders", "OnHold", "--from", "Pending", "--json", "--new-status"],
        db,
        tmp_path,
    )
    assert code == 0
    assert output.strip() == json.dumps({"changed": ROWS, "dryRun": False})
