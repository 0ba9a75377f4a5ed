"""`tablequeue dev` as a newcomer runs it: a subprocess, reached over HTTP, stopped cleanly."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.ports import free_port
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def test_dev_runs_everything_and_stops_cleanly(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tablequeue", "dev", "--folder", str(tmp_path), "--port", str(port)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("tablequeue dev: database sqlite:///")
        assert f"http://127.0.0.1:{port}/ui" in process.stdout.readline()
        base = f"http://127.0.0.1:{port}"

        def counts() -> dict[str, dict[str, int]]:
            try:
                queues = httpx.get(f"{base}/queues", timeout=5).json()
            except httpx.TransportError:
                return {}
            return {q["name"]: q["counts"] for q in queues}

        # The workers process the examples: successes, a permanent failure, scheduled ones.
        settled = wait_until(
            lambda: (
                (c := counts())
                and c["send-order-confirmation"].get("Processed") == 15
                and c["send-order-confirmation"].get("Error", 0) >= 1
                and c["product-updates"].get("Processed") == 5
                and c
            ),
            timeout=60,
        )
        orders = settled["send-order-confirmation"]
        assert orders["OnHold"] == 1 and orders.get("Sleeping", 0) >= 2
        assert httpx.get(f"{base}/docs", timeout=5).status_code == 200
        worker_logs = sorted(p.name for p in tmp_path.glob("worker-*.log"))
        assert worker_logs == ["worker-product-updates.log", "worker-send-order-confirmation.log"]
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    assert "tablequeue dev: stopped" in output
    for log in tmp_path.glob("worker-*.log"):
        assert '"message": "worker stopped"' in log.read_text()
