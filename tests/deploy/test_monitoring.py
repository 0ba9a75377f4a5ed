"""The alert rules and the dashboard against Prometheus: `promtool check rules`, `promtool test
rules` (a unit test per alert), and a real Prometheus scraping a real operator, real workers and a
real API, through which every dashboard panel's query and every alert expression returns series.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tablequeue import NewMessage, connect
from tests.support.deploy_tools import DeployTools
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import Operator, apply, queue, secret, wait_ready
from tests.support.monitoring import ALERTS, alert_rules, dashboard_queries, watched_series
from tests.support.ports import free_port
from tests.support.prometheus_server import prometheus_server
from tests.support.waiting import wait_until

ALERT_TESTS = Path(__file__).parent / "alerts_test.yaml"


def test_monitoring_promtool_check_rules(deploy_tools: DeployTools) -> None:
    result = subprocess.run(
        [str(deploy_tools.promtool), "check", "rules", str(ALERTS)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in result.stdout


def test_monitoring_promtool_unit_tests_every_alert(deploy_tools: DeployTools) -> None:
    tested = {
        case["alertname"]
        for test in yaml.safe_load(ALERT_TESTS.read_text())["tests"]
        for case in test["alert_rule_test"]
        if case["exp_alerts"]
    }
    assert tested == {rule["alert"] for rule in alert_rules()}
    result = subprocess.run(
        [str(deploy_tools.promtool), "test", "rules", ALERT_TESTS.name],
        capture_output=True,
        text=True,
        cwd=ALERT_TESTS.parent,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_monitoring_watched_series_keeps_the_expression() -> None:  # the helper itself
    assert watched_series('a > 0 and b{x=~"y"} == 0') == 'a > bool 0 and b{x=~"y"} == bool 0'


def start(
    command: list[str], log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=log.parent,  # not the repository: its operator/ is no package
            env=env,
        )


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.terminate()
    for process in started:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def test_monitoring_every_panel_and_alert_returns_series_from_real_targets(
    deploy_tools: DeployTools,
    kube: ControlPlane,
    namespace: str,
    operator_kubeconfig: Path,
    postgres_url: str,
    processes: list[subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    tablequeue = [sys.executable, "-m", "tablequeue"]
    # The operator: one Queue it serves (queue gauges, desired replicas), one whose Secret is
    # missing (reconcile errors).
    operator = Operator(operator_kubeconfig, namespace, tmp_path / "operator.log")
    operator.start()
    try:
        apply(kube, secret("db", namespace, postgres_url))
        apply(kube, queue("orders", namespace, "db", health={"whenErrors": "Unhealthy"}))
        apply(kube, queue("broken", namespace, "no-such-secret"))
        wait_ready(kube, "orders", namespace)
        with connect(postgres_url) as db:
            orders = db.queue("orders")
            orders.enqueue_many(
                [NewMessage(message={"Email": f"{n}@example.com"}) for n in range(20)]
            )
            orders.enqueue_many([NewMessage(message={"n": n}) for n in range(5)])  # no Email: Error
            orders.enqueue_many([NewMessage(message={"Email": "x@example.com"}, after=3600)])

        # Workers: one draining `orders` with the example handler (processed and errored
        # outcomes, latencies), one whose database is down (database errors, not ready).
        worker_port, offline_port, api_port = free_port(), free_port(), free_port()
        worker = ["worker", "--handler", "python:tablequeue.examples:handle"]
        processes.append(
            start(
                [*tablequeue, *worker, "orders", "--db", postgres_url,
                 "--port", str(worker_port)],
                tmp_path / "worker.log",
            )
        )  # fmt: skip
        down = f"postgresql://nobody@127.0.0.1:{free_port()}/gone"
        processes.append(
            start(
                [*tablequeue, *worker, "offline", "--db", down,
                 "--port", str(offline_port)],
                tmp_path / "offline-worker.log",
            )
        )  # fmt: skip
        processes.append(
            start(
                [*tablequeue, "api", "--db", postgres_url, "--port", str(api_port)],
                tmp_path / "api.log",
            )
        )

        def worker_target(port: int, queue_name: str) -> dict[str, Any]:
            """As the chart's PodMonitor labels a worker sidecar's target."""
            labels = {"namespace": namespace, "queue": queue_name, "pod": f"{queue_name}-workers-0"}
            return {
                "targets": [f"127.0.0.1:{port}"],
                "labels": labels | {"container": "tablequeue-worker"},
            }

        scrape_configs: list[dict[str, Any]] = [
            {
                "job_name": "tablequeue-system/tq-tablequeue-operator",
                "honor_labels": True,  # as the chart's ServiceMonitor: the Queue's namespace
                "static_configs": [{"targets": [f"127.0.0.1:{operator.metrics_port}"]}],
            },
            {
                "job_name": f"{namespace}/tq-tablequeue-workers",
                "static_configs": [
                    worker_target(worker_port, "orders"),
                    worker_target(offline_port, "offline"),
                ],
            },
            {
                "job_name": "tq-tablequeue-api",
                "static_configs": [{"targets": [f"127.0.0.1:{api_port}"]}],
            },
        ]
        with prometheus_server(
            deploy_tools.prometheus, scrape_configs, tmp_path / "prometheus", (ALERTS,)
        ) as prometheus:
            wait_until(
                lambda: set(prometheus.targets_up().values()) == {"up"}, timeout=90, interval=0.5
            )
            queries = dashboard_queries() | {
                f"alert {rule['alert']}": watched_series(rule["expr"]) for rule in alert_rules()
            }
            prometheus.wait_for_series(queries)
            # The rules loaded into a real Prometheus, and it evaluates them.
            groups = prometheus.api("rules")["groups"]
            assert {r["name"] for g in groups for r in g["rules"]} == {
                rule["alert"] for rule in alert_rules()
            }
            # The failed messages made `orders` Unhealthy, and Prometheus sees it.
            unhealthy = f'tablequeue_queue_healthy{{namespace="{namespace}"}} == 0'
            wait_until(lambda: prometheus.query(unhealthy), timeout=60, interval=1)
    finally:
        operator.stop()
