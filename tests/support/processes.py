"""Child processes of the tests: tied to pytest's life, stopped as Kubernetes stops a Pod."""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, NoReturn

_PR_SET_PDEATHSIG = 1
_LOG_TAIL_CHARS = 6000
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def die_with_parent() -> None:
    """`preexec_fn`, in the child before exec: be killed if the parent (pytest) dies without
    tearing down (Linux)."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def stop_process(process: subprocess.Popen[bytes], timeout: float = 15) -> None:
    """SIGTERM, then SIGKILL if it has not exited after `timeout` seconds; reaps it."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Daemons:
    """The long-running processes of one test fixture (a control plane, a node): each started in
    `cwd` in a session of its own (a Ctrl-C reaches pytest, which tears down in order), tied to
    pytest's life, logging to `logs/<name>.log`; a start that fails raises `error` with the end of
    every log."""

    def __init__(self, logs: Path, cwd: Path, error: type[Exception]) -> None:
        self.logs = logs
        self._cwd = cwd
        self._error = error
        self._running: dict[str, tuple[subprocess.Popen[bytes], IO[bytes]]] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._running

    def log(self, name: str) -> str:
        """What `name` has logged so far (across restarts)."""
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start(self, name: str, command: list[str], env: dict[str, str] | None = None) -> None:
        log = (self.logs / f"{name}.log").open("ab")
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self._cwd,
                start_new_session=True,
                preexec_fn=die_with_parent,
                env=env,
            )
        except BaseException:
            log.close()
            raise
        self._running[name] = (process, log)

    def pid(self, name: str) -> int:
        return self._running[name][0].pid

    def wait_ready(self, name: str, deadline: float, ready: Callable[[], bool]) -> None:
        """Until `ready()`; fails if the process exits first or at the deadline (time.monotonic)."""
        process = self._running[name][0]
        while not ready():
            if process.poll() is not None:
                self.fail(f"{name} exited with code {process.returncode} while starting")
            if time.monotonic() > deadline:
                self.fail(f"{name} was not ready in time")
            time.sleep(0.1)

    def fail(self, message: str) -> NoReturn:
        tails = [
            f"--- {name} log (its end) ---\n{self.log(name)[-_LOG_TAIL_CHARS:]}"
            for name in self._running
        ]
        raise self._error("\n".join([message, *tails]))

    def stop(self, name: str) -> None:
        process, log = self._running.pop(name)
        stop_process(process)
        log.close()

    def stop_all(self) -> None:
        """One at a time, the last started first (an API server whose etcd is gone takes long to
        stop)."""
        for name in reversed(list(self._running)):
            self.stop(name)
