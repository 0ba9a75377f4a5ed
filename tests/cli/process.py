"""`python -m tablequeue ARGS` as a process of its own, in a folder whose `queues.db` is the
database (TABLEQUEUE_DB), as a user would run it from a shell."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_cli(
    folder: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`env`: more variables for the process."""
    return subprocess.run(
        [sys.executable, "-m", "tablequeue", *args],
        capture_output=True,
        text=True,
        cwd=folder,
        env={"PATH": "/usr/bin:/bin", "TABLEQUEUE_DB": "sqlite:///queues.db"} | (env or {}),
        timeout=120,
        check=False,
    )
