"""Running the CLI on a real pseudo-terminal of a given width: what a person at a terminal sees
(progress on stderr, rich tables on stdout)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

CLI = [sys.executable, "-m", "tablequeue.cli"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def environment(db: str, columns: int = 120) -> dict[str, str]:
    return os.environ | {"TABLEQUEUE_DB": db, "TERM": "xterm-256color", "COLUMNS": str(columns)}


def run_in_terminal(args: list[str], db: str, cwd: Path, columns: int = 120) -> tuple[int, str]:
    """Run the CLI with stdin, stdout and stderr on a pseudo-terminal `columns` wide; everything
    it wrote."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    process = subprocess.Popen(
        CLI + args, stdin=child, stdout=child, stderr=child, env=environment(db, columns), cwd=cwd
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


def plain_lines(output: str) -> list[str]:
    """The lines shown, without colours and cursor codes."""
    return ANSI.sub("", output).replace("\r", "").split("\n")
