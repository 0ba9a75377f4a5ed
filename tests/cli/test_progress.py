"""Progress bars: shown on a terminal (a real pseudo-terminal), absent from pipes and --json."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tablequeue import connect
from tablequeue.spec import QueueResource

ROWS = 5_000
CLI = [sys.executable, "-m", "tablequeue.cli"]


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


def _env(db: str) -> dict[str, str]:
    return os.environ | {"TABLEQUEUE_DB": db, "TERM": "xterm-256color", "COLUMNS": "120"}


def run_in_terminal(args: list[str], db: str, cwd: Path) -> tuple[int, str]:
    """Run the CLI with stdin, stdout and stderr on a pseudo-terminal; everything it wrote."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        CLI + args, stdin=child, stdout=child, stderr=child, env=_env(db), cwd=cwd
    )
    os.close(child)
    output = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not chunk:
                break
            output += chunk
        elif process.poll() is not None:
            break
    os.close(main)
    return process.wait(timeout=60), output.decode("utf-8", "replace")


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
    assert f"{ROWS} messages: {ROWS} inserted, 0 updated, 0 discarded" in output
    code, output = run_in_terminal(["purge", "orders", "--status", "Pending"], db, tmp_path)
    assert code == 0 and "deleting finished messages" in output
    assert f"deleted {ROWS} message(s)" in output


def test_pipes_and_json_get_no_progress(jsonl: Path, db: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [*CLI, "enqueue", "orders", "-f", str(jsonl)],
        capture_output=True,
        text=True,
        env=_env(db),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0
    assert done.stdout == f"{ROWS} messages: {ROWS} inserted, 0 updated, 0 discarded\n"
    assert done.stderr == ""
    code, output = run_in_terminal(
        ["set-status", "orders", "OnHold", "--from", "Pending", "--json", "--new-status"],
        db,
        tmp_path,
    )
    assert code == 0
    assert output.strip() == json.dumps({"changed": ROWS, "dryRun": False})
