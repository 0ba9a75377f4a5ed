"""HPA mode end to end, every part real: the operator exports tablequeue_backlog, Prometheus
(Debian's) scrapes it every second, prometheus-adapter (built by scripts/build-deploy-tools, with
the chart's rules file) serves it as the external metric tablequeue_backlog through the
aggregation layer of the test API server (an APIService), and kube-controller-manager's HPA
controller scales the worker Deployment on it. No kubelet: the HPA acts on the Deployment's
replicas, Pods never run.

The APIService's Service is of type ExternalName `localhost`: the aggregator dials
`https://localhost:<port>` where the adapter listens (the API server refuses loopback addresses
in Endpoints, and an ExternalName needs no network namespace or privileges). The adapter's
serving certificate is self-signed (`insecureSkipTLSVerify`, as prometheus-adapter's own chart
does by default); the API server proxies with its front-proxy client certificate and the adapter
checks it against the request-header CA that kube-apiserver publishes.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tablequeue import NewMessage, connect
from tests.support.deploy_tools import ADAPTER_RULES, DeployTools
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
from tests.support.ports import free_port
from tests.support.prometheus_server import PrometheusServer, prometheus_server
from tests.support.waiting import wait_until

__all__ = ["operator"]  # a fixture, for this module
pytestmark = pytest.mark.timeout(600)

API_SERVICE = "v1beta1.external.metrics.k8s.io"
EXTERNAL_METRICS = "/apis/external.metrics.k8s.io/v1beta1"
ADAPTER_SERVICE = "tablequeue-prometheus-adapter"
DESIRED_REPLICAS = "tablequeue_operator_desired_replicas"


@dataclass
class ExternalMetrics:
    prometheus: PrometheusServer
    adapter_log: Path


def _adapter_command(
    binary: Path, kube: ControlPlane, port: int, prometheus: PrometheusServer, folder: Path
) -> list[str]:
    kubeconfig = str(kube.kubeconfig)
    return [
        str(binary),
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={folder / 'certs'}",
        f"--lister-kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--prometheus-url={prometheus.url}/",
        f"--config={ADAPTER_RULES}",
        "--metrics-relist-interval=1s",
        "--v=2",
    ]


def _register(kube: ControlPlane, namespace: str, port: int) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": ADAPTER_SERVICE, "namespace": namespace},
        "spec": {"type": "ExternalName", "externalName": "localhost"},
    }
    api_service = {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": API_SERVICE},
        "spec": {
            "group": "external.metrics.k8s.io",
            "version": "v1beta1",
            "service": {"namespace": namespace, "name": ADAPTER_SERVICE, "port": port},
            "insecureSkipTLSVerify": True,
            "groupPriorityMinimum": 100,
            "versionPriority": 100,
        },
    }
    apply(kube, service, api_service)


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
    with prometheus_server(deploy_tools.prometheus, [scrape], tmp_path / "prometheus") as prom:
        port = free_port()
        log = tmp_path / "prometheus-adapter.log"
        command = _adapter_command(deploy_tools.prometheus_adapter, kube, port, prom, tmp_path)
        with log.open("wb") as output:
            adapter = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT
            )
        try:
            _register(kube, namespace, port)

            def served() -> bool:
                assert adapter.poll() is None, log.read_text()[-6000:]
                return kube.get(EXTERNAL_METRICS)[0] == 200

            wait_until(served, timeout=60, interval=0.25)
            yield ExternalMetrics(prom, log)
        finally:
            # An APIService without its server would break discovery (and namespace deletion)
            # for every later test of the session.
            kube.kubectl("delete", "apiservice", API_SERVICE, "--ignore-not-found")
            adapter.terminate()
            try:
                adapter.wait(timeout=15)
            except subprocess.TimeoutExpired:
                adapter.kill()
                adapter.wait()


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
