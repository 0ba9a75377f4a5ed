"""Secrets (issue 17): every process kind, given a database password in each URL form, never
writes it: not on stdout or stderr, not in logs, HTTP bodies or metrics. (The operator's
conditions, Events and log: tests/operator/test_trust_operator.py.)"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.ports import free_port
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
SECRET = "pw-s3cret-Trust17"
FORMS = {
    "userinfo": f"postgresql://ann:{SECRET}@127.0.0.1:{{port}}/db",
    "query": f"postgresql://ann@127.0.0.1:{{port}}/db?password={SECRET}",
    "query-upper": f"postgresql://ann@127.0.0.1:{{port}}/db?sslmode=disable&PASSWORD={SECRET}",
}


@pytest.fixture(params=list(FORMS))
def url(request: pytest.FixtureRequest) -> str:
    """A URL with the password, to a loopback port where nothing listens."""
    return FORMS[request.param].format(port=free_port())


@contextlib.contextmanager
def run(tmp_path: Path, *args: str) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    log = tmp_path / f"{args[0]}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "tablequeue", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "TABLEQUEUE_DB_CONNECT_TIMEOUT": "2"},
        )
    try:
        yield process, log
    finally:
        process.kill()
        process.wait()


def test_no_process_writes_the_password(url: str, tmp_path: Path) -> None:
    written: list[str] = []

    cli = subprocess.run(
        [sys.executable, "-m", "tablequeue", "stats", "orders", "--db", url],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert cli.returncode == 1 and cli.stderr.startswith("error: cannot connect to")
    written += [cli.stdout, cli.stderr]

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with run(tmp_path, "api", "--db", url, "--port", str(port)) as (process, log):
        wait_until(lambda: _answers(base), timeout=60)
        for path in ("/readyz", "/queues", "/queues/orders", "/metrics", "/ui/queues/orders"):
            written.append(httpx.get(base + path, timeout=30).text)
        assert process.poll() is None
        written.append(log.read_text(errors="replace"))

    port = free_port()
    worker = ["worker", "orders", "--db", url, "--handler", "http://127.0.0.1:9/x"]
    with run(tmp_path, *worker, "--port", str(port), "--host", "127.0.0.1") as (process, log):
        wait_until(
            lambda: (
                "cannot connect" in log.read_text(errors="replace") or process.poll() is not None
            ),
            timeout=60,
        )
        if _answers(f"http://127.0.0.1:{port}"):
            for path in ("/readyz", "/metrics"):
                written.append(httpx.get(f"http://127.0.0.1:{port}{path}", timeout=30).text)
        worker_log = log.read_text(errors="replace")
        assert "cannot connect to postgresql://ann" in worker_log  # it did log the URL, masked
        written.append(worker_log)

    everything = "\n".join(written)
    assert "cannot connect to postgresql://ann" in everything  # the URL is shown, masked
    assert SECRET not in everything


def _answers(base: str) -> bool:
    try:
        httpx.get(base + "/livez", timeout=2)
    except httpx.HTTPError:
        return False
    return True
