"""A throwaway MariaDB server: mariadb-install-db into a temporary folder, a free loopback port,
durability off (no binary log, no flush at commit, no doublewrite).

MariaDB runs as root only when asked; as root the server and its data belong to the `mysql`
user that the Debian package creates. Tests connect as `tablequeue` (no password) over TCP.
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

import pymysql

from . import leftovers
from .ports import free_port
from .processes import stop_process

USER = "tablequeue"
ODBC_DRIVER = "MariaDB Unicode"
"""The driver name Debian's odbc-mariadb registers in /etc/odbcinst.ini."""


def _binary(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
    if found is None:
        raise RuntimeError(f"{name} not found: run scripts/setup-engines to install MariaDB")
    return found


class MariaDbServer:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.data = base / "data"
        self.socket = base / "mariadb.sock"
        self.port = free_port()
        self.as_mysql = os.geteuid() == 0
        self.process: subprocess.Popen[bytes] | None = None
        self._recorded: Path | None = None

    def url(self, database: str, driver: str = "mariadb") -> str:
        return f"{driver}://{USER}@127.0.0.1:{self.port}/{database}"

    def odbc_url(self, database: str) -> str:
        """A DSN-less mysql+pyodbc URL through MariaDB's ODBC driver."""
        driver = ODBC_DRIVER.replace(" ", "+")
        return f"mysql+pyodbc://{USER}@127.0.0.1:{self.port}/{database}?driver={driver}"

    def init(self) -> None:
        user = []
        if self.as_mysql:
            shutil.chown(self.base, "mysql", "mysql")
            user = ["--user=mysql"]
        installed = subprocess.run(
            [
                _binary("mariadb-install-db"),
                "--no-defaults",
                f"--datadir={self.data}",
                # Its temporary tables in its own folder, as the server's: in the shared /tmp a
                # bootstrap failed once on one removed under it ("Could not remove temporary
                # table '/tmp/#sql-temptable-...'", then "Unknown table mysql.tmp_proxies_priv").
                f"--tmpdir={self.base}",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
                *user,
            ],
            capture_output=True,
        )
        if installed.returncode != 0:
            output = (installed.stdout + installed.stderr).decode(errors="replace")[-3000:]
            raise RuntimeError(f"mariadb-install-db exited with {installed.returncode}: {output}")

    def start(self) -> None:
        command = [
            _binary("mariadbd"),
            "--no-defaults",
            f"--datadir={self.data}",
            f"--socket={self.socket}",
            f"--tmpdir={self.base}",  # its own, not the shared /tmp others clean up
            f"--pid-file={self.base / 'mariadb.pid'}",
            f"--log-error={self.base / 'error.log'}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            "--skip-name-resolve",
            "--skip-log-bin",
            "--innodb-flush-log-at-trx-commit=0",
            "--innodb-doublewrite=0",
            "--innodb-buffer-pool-size=256M",
            "--innodb-log-file-size=256M",
            "--innodb-lock-wait-timeout=30",
            "--max-connections=300",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_unicode_ci",
            "--default-time-zone=+00:00",
        ]
        if self.as_mysql:
            command.append("--user=mysql")
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # It drops root for mysql, and with it the parent-death signal: recorded instead.
        self._recorded = leftovers.record(self.process.pid, self.base)
        self._wait_ready()
        with self.root() as connection, connection.cursor() as cursor:
            cursor.execute(f"CREATE USER '{USER}'@'%'")
            cursor.execute(f"GRANT ALL ON *.* TO '{USER}'@'%'")

    @contextlib.contextmanager
    def root(self) -> Iterator[pymysql.Connection]:
        # No TLS on the socket: PyMySQL would load the system's CA store for every connection
        # (27 ms of CPU), and the suite opens one per fresh database.
        connection = pymysql.connect(
            unix_socket=str(self.socket), user="root", autocommit=True, ssl_disabled=True
        )
        try:
            yield connection
        finally:
            connection.close()

    def _wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                log = (self.base / "error.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"mariadbd exited with {self.process.returncode}: {log}")
            try:
                with self.root():
                    return
            except pymysql.err.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def version(self) -> str:
        with self.root() as connection, connection.cursor() as cursor:
            cursor.execute("SELECT VERSION()")
            return str(cursor.fetchone()[0])  # type: ignore[index]

    def create_database(self, name: str, driver: str = "mariadb") -> str:
        with self.root() as connection, connection.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE `{name}`")  # name is generated by the tests
        return self.url(name, driver)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, timeout=60)
            leftovers.forget(self._recorded)


@contextlib.contextmanager
def mariadb_server() -> Iterator[MariaDbServer]:
    base = Path(tempfile.mkdtemp(prefix="tablequeue-mariadb-"))
    server = MariaDbServer(base)
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
