"""HPA mode end to end, every part real: the operator exports tablequeue_backlog, Prometheus
(Debian's) scrapes it every second, prometheus-adapter (built by scripts/build-deploy-tools, with
the chart's rules file) serves it as the external metric tablequeue_backlog through the
aggregation layer of the test API server (an APIService), and kube-controller-manager's HPA
controller scales the worker Deployment on it. No kubelet: the HPA acts on the Deployment's
replicas (tests/deploy/test_pods.py has the same with pods). How the adapter is served:
tests/support/metrics_adapter.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tablequeue import NewMessage, connect
from tests.support.deploy_tools import DeployTools
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import (
    Operator,
    apply,
    get,
    operator,
    queue,
    secret,
    wait_ready,
)
from tests.support.metrics_adapter import EXTERNAL_METRICS, prometheus_adapter
from tests.support.prometheus_server import PrometheusServer, prometheus_server
from tests.support.waiting import wait_until

__all__ = ["operator"]  # a fixture, for this module
pytestmark = pytest.mark.timeout(600)

DESIRED_REPLICAS = "tablequeue_operator_desired_replicas"


@dataclass
class ExternalMetrics:
    prometheus: PrometheusServer
    adapter_log: Path


@pytest.fixture
def external_metrics(
    kube: ControlPlane,
    deploy_tools: DeployTools,
    operator: Operator,
    namespace: str,
    tmp_path: Path,
) -> Iterator[ExternalMetrics]:
    """Prometheus scraping the operator, prometheus-adapter reading Prometheus, and the
    external metrics API served by the test API server through the adapter."""
    scrape = {
        "job_name": "tablequeue-operator",
        "honor_labels": True,  # the Queue's namespace label, not the target's
        "static_configs": [{"targets": [f"127.0.0.1:{operator.metrics_port}"]}],
    }
    with (
        prometheus_server(deploy_tools.prometheus, [scrape], tmp_path / "prometheus") as prom,
        prometheus_adapter(
            deploy_tools.prometheus_adapter, kube, prom, namespace, tmp_path
        ) as adapter_log,
    ):
        yield ExternalMetrics(prom, adapter_log)


def replicas_of(kube: ControlPlane, name: str, namespace: str) -> int | None:
    deployment = get(kube, "deployment", f"{name}-workers", namespace)
    return None if deployment is None else deployment["spec"].get("replicas")


def external_backlog(kube: ControlPlane, name: str, namespace: str) -> float | None:
    """tablequeue_backlog{queue=NAME} as the HPA controller reads it, through the aggregator."""
    path = (
        f"{EXTERNAL_METRICS}/namespaces/{namespace}/tablequeue_backlog?labelSelector=queue%3D{name}"
    )
    status, body = kube.get(path)
    if status != 200:
        return None
    items: list[dict[str, Any]] = json.loads(body)["items"]
    return float(items[0]["value"]) if items else None


def hpa_average(kube: ControlPlane, name: str, namespace: str) -> str | None:
    """The HPA's last reading of tablequeue_backlog per replica (status.currentMetrics)."""
    hpa = get(kube, "hpa", f"{name}-workers", namespace) or {}
    for metric in (hpa.get("status") or {}).get("currentMetrics") or []:
        if metric["external"]["metric"]["name"] == "tablequeue_backlog":
            return str(metric["external"]["current"]["averageValue"])
    return None


def desired_replicas_gauge(operator: Operator, name: str) -> float | None:
    for family in text_string_to_metric_families(operator.metrics()):
        for sample in family.samples:
            if (sample.name, sample.labels.get("queue")) == (DESIRED_REPLICAS, name):
                return float(sample.value)
    return None


def test_the_hpa_scales_the_workers_on_the_backlog_through_prometheus_adapter(
    kube: ControlPlane,
    namespace: str,
    operator: Operator,
    external_metrics: ExternalMetrics,
    postgres_url: str,
) -> None:
    autoscaling = {"maxReplicas": 5, "messagesPerReplica": 100, "cooldownSeconds": 2}
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("jobs", namespace, workers={"autoscaling": autoscaling | {"mode": "Operator"}}),
    )
    wait_ready(kube, "jobs", namespace)
    wait_until(lambda: replicas_of(kube, "jobs", namespace) == 0, timeout=30)

    # An idle queue at 0 replicas switched to HPA mode: handed to the HPA at 1, not stuck at 0.
    to_hpa = {"spec": {"workers": {"autoscaling": {"mode": "HPA"}}}}
    kube.kubectl(
        "patch", "queue", "jobs", "-n", namespace, "--type=merge", "-p", json.dumps(to_hpa)
    )
    wait_until(lambda: get(kube, "hpa", "jobs-workers", namespace), timeout=30)
    wait_until(lambda: replicas_of(kube, "jobs", namespace) == 1, timeout=30)
    wait_until(lambda: external_backlog(kube, "jobs", namespace) == 0, timeout=60, interval=0.25)

    timings: dict[str, float] = {}
    db = connect(postgres_url)
    try:
        jobs = db.queue("jobs")
        began = time.monotonic()
        jobs.enqueue_many([NewMessage(message={"n": n}) for n in range(300)])
        wait_until(
            lambda: external_backlog(kube, "jobs", namespace) == 300, timeout=60, interval=0.25
        )
        timings["metric 300 via the aggregator"] = time.monotonic() - began
        wait_until(lambda: replicas_of(kube, "jobs", namespace) == 3, timeout=90, interval=0.25)
        timings["scaled 1 -> 3"] = time.monotonic() - began
        # The HPA's own view once it has acted: 300 over 3 replicas, 100 each.
        wait_until(lambda: hpa_average(kube, "jobs", namespace) == "100", timeout=30)
        wait_until(lambda: desired_replicas_gauge(operator, "jobs") == 3, timeout=30)

        began = time.monotonic()
        assert jobs.purge(statuses=["Pending"]) == 300  # drained
        wait_until(lambda: replicas_of(kube, "jobs", namespace) == 1, timeout=90, interval=0.25)
        timings["drained, scaled 3 -> 1"] = time.monotonic() - began
        wait_until(lambda: desired_replicas_gauge(operator, "jobs") == 1, timeout=30)
    finally:
        db.close()
    reasons = [
        e["reason"]
        for e in kube.kubectl_json("get", "events", "-n", namespace)["items"]
        if e["involvedObject"]["kind"] == "HorizontalPodAutoscaler"
    ]
    assert "SuccessfulRescale" in reasons
    print(f"HPA end to end: {', '.join(f'{k} in {v:.1f}s' for k, v in timings.items())}")
