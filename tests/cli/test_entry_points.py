"""The command starts the three ways the docs and the operator use: the console script,
`python -m tablequeue` (which finds the command without the core importing it) and
`python -m tablequeue.cli`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CONSOLE_SCRIPT = str(Path(sys.executable).with_name("tablequeue"))


@pytest.mark.parametrize(
    "program",
    [
        [CONSOLE_SCRIPT],
        [sys.executable, "-m", "tablequeue"],
        [sys.executable, "-m", "tablequeue.cli"],
    ],
)
def test_the_command_starts(program: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [*program, "--version"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("version 0.1.0\n")
