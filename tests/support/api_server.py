"""Serve the API over real HTTP for tests: uvicorn on a free loopback port, from a thread or as
`tablequeue api` in a process of its own."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from tablequeue.api import create_app
from tablequeue.api.auth import Auth
from tablequeue.api.limits import MAX_REQUEST_HEAD_BYTES
from tablequeue.database import Database
from tests.support.ports import free_port
from tests.support.waiting import wait_until


@contextlib.contextmanager
def serve_api(
    database: Database | Mapping[str, Database], auth: Auth | None = None, **options: Any
) -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(
        create_app(database, auth, **options),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, timeout=30)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextlib.contextmanager
def api_client(
    database: Database | Mapping[str, Database], auth: Auth | None = None, **options: Any
) -> Iterator[httpx.Client]:
    with (
        serve_api(database, auth, **options) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        yield client


class ApiProcess:
    """`tablequeue api` as users run it: its own process, so a request it hangs on does not hold
    the test's interpreter."""

    def __init__(
        self,
        url: str,
        tmp_path: Path,
        environment: dict[str, str] | None = None,
        arguments: tuple[str, ...] = (),
    ) -> None:
        self.url, self.log = url, tmp_path / "api.log"
        self.environment = environment or {}
        self.arguments = arguments
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tablequeue", "api", f"--port={self.port}", *self.arguments],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.log.parent,
                env={"PATH": "/usr/bin:/bin", "TABLEQUEUE_DB": self.url} | self.environment,
            )
        wait_until(self.answers, timeout=60)

    def answers(self) -> bool:
        try:
            return httpx.get(f"{self.base}/livez", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


@contextlib.contextmanager
def api_process(
    url: str,
    tmp_path: Path,
    environment: dict[str, str] | None = None,
    arguments: tuple[str, ...] = (),
) -> Iterator[ApiProcess]:
    """A started `tablequeue api` on `url` (`environment`: e.g. its tokens; `arguments`: more
    flags), killed at the end."""
    running = ApiProcess(url, tmp_path, environment, arguments)
    running.start()
    try:
        yield running
    finally:
        if running.process is not None and running.process.poll() is None:
            running.kill()
