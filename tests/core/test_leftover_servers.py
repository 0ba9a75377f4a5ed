"""Issue 44 (left open): a killed test run left its throwaway servers running (PostgreSQL's
pg_ctl detaches the server; MariaDB drops root and with it the parent-death signal), and the
next run, and the developer's machine, paid for them. A process that starts both servers and is
SIGKILLed leaves them running; `leftovers.reap` (run at the start of every session) stops them
and removes their folders, and leaves alone the servers of a process still alive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import leftovers
from tests.support.postgres_server import postgres_server
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
STARTS_BOTH = """
import sys, time
from tests.support.mariadb_server import mariadb_server
from tests.support.postgres_server import postgres_server
with postgres_server() as pg, mariadb_server() as maria:
    print(pg.postmaster_pid(), pg.base, maria.process.pid, maria.base, flush=True)
    time.sleep(600)
"""


def alive(pid: int) -> bool:
    return leftovers._alive(pid)


def test_servers_of_a_killed_run_are_stopped_by_the_next_and_others_left_alone() -> None:
    run = subprocess.Popen(
        [sys.executable, "-c", STARTS_BOTH], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert run.stdout is not None
    pg_pid, pg_base, maria_pid, maria_base = run.stdout.readline().split()
    with postgres_server() as ours:  # this process's: alive, not reaped
        run.send_signal(signal.SIGKILL)
        run.wait()
        for pid in (int(pg_pid), int(maria_pid)):
            assert alive(pid), "the killed run's server went with it: nothing to reap"

        stopped = leftovers.reap()

        assert sorted(stopped) == sorted([int(pg_pid), int(maria_pid)])
        wait_until(lambda: not alive(int(pg_pid)) and not alive(int(maria_pid)), timeout=30)
        assert not Path(pg_base).exists() and not Path(maria_base).exists()
        ours_pid = ours.postmaster_pid()
        assert alive(ours_pid)
        assert list(leftovers.FOLDER.glob(f"{os.getpid()}-{ours_pid}"))
        assert not list(leftovers.FOLDER.glob(f"*-{pg_pid}"))
    assert not list(leftovers.FOLDER.glob(f"*-{ours_pid}")), "a clean stop forgets its server"
