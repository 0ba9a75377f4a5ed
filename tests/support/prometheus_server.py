"""A throwaway Prometheus (Debian's, installed by scripts/setup-deploy) on a free loopback port.

    with prometheus_server(deploy_tools.prometheus, scrape_configs, tmp_path) as prometheus:
        prometheus.query("up")  # the result list of /api/v1/query

Scrapes every second; its data lives in a folder of the caller's and goes with it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.ports import free_port
from tests.support.waiting import wait_until

SCRAPE_INTERVAL = "1s"


class PrometheusServer:
    def __init__(self, url: str, process: subprocess.Popen[bytes], log: Path) -> None:
        self.url = url
        self.process = process
        self.log_path = log

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def api(self, path: str, **params: str) -> Any:
        """GET /api/v1/PATH; the `data` of a success, AssertionError (with the error) otherwise."""
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as error:
            body = json.loads(error.read() or b"{}")
        assert body.get("status") == "success", f"{path} {params}: {body}"
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's result: one entry per series (empty: no series)."""
        data = self.api("query", query=expr)
        result: list[dict[str, Any]] = data["result"]
        return result

    def wait_for_series(self, queries: dict[str, str], timeout: float = 120) -> None:
        """Wait until every query (by name) has returned series once; at the deadline, fail
        naming those that never did, with Prometheus' log."""
        missing = dict(queries)

        def all_returned() -> bool:
            for name, expr in list(missing.items()):
                if self.query(expr):
                    del missing[name]
            return not missing

        try:
            wait_until(all_returned, timeout=timeout, interval=1)
        except AssertionError:
            raise AssertionError(f"no series for: {missing}\n{self.log()}") from None

    def targets_up(self) -> dict[str, str]:
        """Each active target's scrape URL and health (up, down, unknown)."""
        return {t["scrapeUrl"]: t["health"] for t in self.api("targets")["activeTargets"]}


@contextlib.contextmanager
def prometheus_server(
    binary: Path,
    scrape_configs: list[dict[str, Any]],
    folder: Path,
    rule_files: tuple[Path, ...] = (),
) -> Iterator[PrometheusServer]:
    """Start Prometheus with these scrape configs (JSON is YAML) and rule files; stop it after."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "scrape_configs": scrape_configs,
        "rule_files": [str(path) for path in rule_files],
    }
    (folder / "prometheus.yml").write_text(json.dumps(config, indent=2))
    port = free_port()
    log = folder / "prometheus.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                str(binary),
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=folder,
        )
    server = PrometheusServer(f"http://127.0.0.1:{port}", process, log)
    try:

        def ready() -> bool:
            assert process.poll() is None, f"prometheus exited:\n{server.log()}"
            try:
                with urllib.request.urlopen(f"{server.url}/-/ready", timeout=2) as response:
                    return int(response.status) == 200
            except (urllib.error.URLError, OSError):
                return False

        wait_until(ready, timeout=60, interval=0.1)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
