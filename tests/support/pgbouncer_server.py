"""A throwaway PgBouncer (Debian's `pgbouncer`, installed by scripts/setup) in transaction
pooling mode in front of a PostgreSQL server: a generated ini, a free port, trust auth.

PgBouncer refuses to run as root, so as root it runs as the `postgres` user, as the server does.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg

from . import leftovers
from .ports import free_port


@contextlib.contextmanager
def pgbouncer(pg_port: int, database: str, pool_size: int = 4) -> Iterator[str]:
    """PgBouncer in `pool_mode = transaction` with `pool_size` server connections for
    `database` on the server at `pg_port`; yields the URL of that database through it."""
    binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    if not Path(binary).exists():
        raise RuntimeError("pgbouncer not found: run scripts/setup to install it")
    folder = Path(tempfile.mkdtemp(prefix="tablequeue-pgbouncer-"))
    port = free_port()
    (folder / "users.txt").write_text('"postgres" ""\n')
    (folder / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"{database} = host=127.0.0.1 port={pg_port} dbname={database}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {folder / 'users.txt'}\n"
        f"pool_mode = transaction\ndefault_pool_size = {pool_size}\nmax_client_conn = 500\n"
        "ignore_startup_parameters = extra_float_digits\n"
        f"logfile = {folder / 'pgbouncer.log'}\npidfile = {folder / 'pgbouncer.pid'}\n"
    )
    command = [binary, str(folder / "pgbouncer.ini")]
    if os.geteuid() == 0:
        for path in (folder, *folder.iterdir()):
            shutil.chown(path, "postgres", "postgres")
        command = ["runuser", "-u", "postgres", "--", *command]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    # runuser's child runs as postgres, without the parent-death signal: recorded instead.
    recorded = leftovers.record(process.pid, folder)
    url = f"postgresql://postgres@127.0.0.1:{port}/{database}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(url, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(30)
        leftovers.forget(recorded)
        shutil.rmtree(folder, ignore_errors=True)
