"""`tablequeue healthcheck`, the worker image's HEALTHCHECK, against a real worker and a real
`tablequeue api` process: it reads the serving process's command line and environment (as PID 1
of a container) and probes the port that command listens on, whether a flag or a variable set
it; the image sets TABLEQUEUE_PORT=9090 while the chart runs `api --port=8000`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tablequeue import connect
from tablequeue.cli.healthcheck import Served, served_by
from tablequeue.spec import QueueResource
from tests.support.api_server import api_process
from tests.support.ports import free_port

from .helpers import StartWorker

IMAGE_PROGRAM = ["/opt/tablequeue/bin/python3", "/opt/tablequeue/bin/tablequeue"]
IMAGE_ENV = {"TABLEQUEUE_PORT": "9090", "PATH": "/opt/tablequeue/bin:/usr/bin"}


def healthcheck(*args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "tablequeue", "healthcheck", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("TABLEQUEUE_")},
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("argv", "environ", "served"),
    [
        (["worker"], IMAGE_ENV, Served("worker", "0.0.0.0", 9090)),
        (["api", "--host=0.0.0.0", "--port=8000"], IMAGE_ENV, Served("api", "0.0.0.0", 8000)),
        (["api"], IMAGE_ENV, Served("api", "127.0.0.1", 9090)),
        (["api"], IMAGE_ENV | {"TABLEQUEUE_API_PORT": "8080"}, Served("api", "127.0.0.1", 8080)),
        (["api", "--port", "1", "--port", "2"], {}, Served("api", "127.0.0.1", 2)),
        (
            ["worker", "orders", "--host", "::1"],
            {"TABLEQUEUE_PORT": ""},
            Served("worker", "::1", 9090),
        ),
    ],
    ids=[
        "the image's worker",
        "the chart's api",
        "api without flags in the image",
        "the API's own variable first",
        "the last flag wins",
        "an empty variable is unset",
    ],
)
def test_where_each_command_of_the_image_listens(
    argv: list[str], environ: dict[str, str], served: Served
) -> None:
    assert served_by([*IMAGE_PROGRAM, *argv], environ) == served


@pytest.fixture
def orders_url(sqlite_url: str) -> str:
    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("orders"))
    return sqlite_url


def test_a_real_worker_set_by_its_variable_is_healthy(
    start_worker: StartWorker, orders_url: str
) -> None:
    port = free_port()
    worker = start_worker("orders", orders_url, env={"TABLEQUEUE_PORT": str(port)}, port=port)
    worker.wait_ready()
    assert healthcheck("--pid", str(worker.process.pid)) == (
        0,
        f"worker healthy: http://127.0.0.1:{port}/livez\n",
    )
    worker.process.kill()
    worker.process.wait()
    code, output = healthcheck("--port", str(port))
    assert code == 1 and output.startswith(f"error: given unhealthy: http://127.0.0.1:{port}/livez")


def test_a_real_api_with_a_port_flag_beside_another_variable_is_healthy(
    orders_url: str, tmp_path: Path
) -> None:
    with api_process(orders_url, tmp_path, {"TABLEQUEUE_PORT": "9"}) as api:
        assert api.process is not None
        assert healthcheck("--pid", str(api.process.pid)) == (
            0,
            f"api healthy: http://127.0.0.1:{api.port}/livez\n",
        )


def test_a_process_that_is_not_a_server_is_named() -> None:
    code, output = healthcheck("--pid", str(os.getpid()))
    assert code == 1
    assert "not `tablequeue worker` or `tablequeue api`: give --port" in output
