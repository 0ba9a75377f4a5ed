"""Fixtures of the worker tests: a records folder for the handlers, worker processes, an app."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import worker_app
from tests.support.engines import db_url_each_engine_once  # noqa: F401 (this folder's db_url)
from tests.support.ports import free_port

from .helpers import ROOT, SYNC, StartWorker, WorkerProcess


@pytest.fixture
def records(tmp_path: Path) -> Path:
    folder = tmp_path / "records"
    folder.mkdir()
    return folder


@pytest.fixture
def start_worker(tmp_path: Path, records: Path) -> Iterator[StartWorker]:
    """Start `tablequeue worker` subprocesses; every one is killed at teardown."""
    started: list[WorkerProcess] = []
    clean_env = {k: v for k, v in os.environ.items() if not k.startswith("TABLEQUEUE_")}

    def start(
        queue: str | None,
        db_url: str | None,
        handler: str | None = SYNC,
        *options: str,
        env: dict[str, str] | None = None,
        port: int | None = None,
        program: list[str] | None = None,
    ) -> WorkerProcess:
        name = f"worker-{len(started) + 1}"
        port = port or free_port()
        command = [*(program or [sys.executable, "-m", "tablequeue"]), "worker"]
        command += [queue] if queue is not None else []
        for flag, value in (("--db", db_url), ("--handler", handler)):
            if value is not None:
                command += [flag, value]
        if env is None or "TABLEQUEUE_PORT" not in env:
            command += ["--port", str(port), "--host", "127.0.0.1", "--owner", name]
        command += options
        log_path = tmp_path / f"{name}.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=clean_env | {"TQ_RECORDS": str(records)} | (env or {}),
            )
        worker = WorkerProcess(name, process, port, log_path)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        if worker.process.poll() is None:
            worker.process.kill()
        worker.process.wait()
        print(f"--- {worker.name} (exit {worker.process.returncode}) ---\n{worker.log_tail()}")


@pytest.fixture
def app() -> Iterator[worker_app.App]:
    with worker_app.serve() as served:
        yield served
