"""Throwaway servers a killed test run left behind, stopped by the next run.

A server the tests start as their own child dies with them (`processes.die_with_parent`); one
that detaches (PostgreSQL's `pg_ctl` starts the server as a daemon) would run on after a killed
run, holding its port, memory and folder, on the next run's machine too. Each such server is
recorded in FOLDER as a file `<owner pid>-<server pid>` holding its folder; `reap`, at the
start of every test session, stops the servers whose owner is gone and removes their folders.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

FOLDER = Path(tempfile.gettempdir()) / "tablequeue-test-servers"
STOP_SECONDS = 10.0
"""How long a left server has to stop on SIGTERM before SIGKILL (its clients are gone with
their test run: PostgreSQL's smart shutdown does not wait)."""


def record(pid: int, folder: Path) -> Path:
    """Record the server `pid`, whose files are in `folder`, as this process's."""
    FOLDER.mkdir(exist_ok=True)
    entry = FOLDER / f"{os.getpid()}-{pid}"
    entry.write_text(str(folder))
    return entry


def forget(entry: Path | None) -> None:
    """The server of `entry` was stopped by its owner."""
    if entry is not None:
        entry.unlink(missing_ok=True)


def reap() -> list[int]:
    """Stop the recorded servers whose owner is gone and remove their folders; the pids
    stopped."""
    stopped = []
    for entry in sorted(FOLDER.glob("*-*")) if FOLDER.is_dir() else []:
        owner, _, pid_text = entry.name.partition("-")
        if not (owner.isdigit() and pid_text.isdigit()) or _alive(int(owner)):
            continue
        folder = entry.read_text()
        pid = int(pid_text)
        if _alive(pid) and folder in _command_line(pid):  # the pid was not reused since
            _stop(pid)
            stopped.append(pid)
        if folder.startswith(tempfile.gettempdir()):
            shutil.rmtree(folder, ignore_errors=True)
        entry.unlink(missing_ok=True)
    return stopped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] == "Z"


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _stop(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
