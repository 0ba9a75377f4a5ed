"""prometheus-adapter serving the external metrics API through a test API server's aggregation
layer, with the chart's rules file (for tests/deploy/test_autoscaling_hpa.py and test_pods.py).

The APIService's Service is of type ExternalName `localhost`: the aggregator dials
`https://localhost:<port>` where the adapter listens (the API server refuses loopback addresses
in Endpoints, and an ExternalName needs no network namespace or privileges). The adapter's
serving certificate is self-signed (`insecureSkipTLSVerify`, as prometheus-adapter's own chart
does by default); the API server proxies with its front-proxy client certificate and the adapter
checks it against the request-header CA that kube-apiserver publishes.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .deploy_tools import ADAPTER_RULES
from .kube.control_plane import ControlPlane
from .kube.fixtures import apply
from .ports import free_port
from .processes import die_with_parent, stop_process
from .prometheus_server import PrometheusServer
from .waiting import wait_until

API_SERVICE = "v1beta1.external.metrics.k8s.io"
EXTERNAL_METRICS = "/apis/external.metrics.k8s.io/v1beta1"
ADAPTER_SERVICE = "tablequeue-prometheus-adapter"


def server_flags(kube: ControlPlane, port: int, cert_dir: Path) -> list[str]:
    """The flags of an aggregated API server on localhost:`port` that reads `kube` with its admin
    kubeconfig (prometheus-adapter and KEDA's metrics server are both built on the same library)."""
    kubeconfig = str(kube.kubeconfig)
    return [
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={cert_dir}",
        f"--lister-kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
    ]


def register_external_metrics(kube: ControlPlane, namespace: str, port: int) -> None:
    """The APIService of the external metrics API, served on localhost:`port`."""
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


@contextlib.contextmanager
def serve_external_metrics(
    command: list[str], kube: ControlPlane, namespace: str, port: int, log: Path, **popen: Any
) -> Iterator[Path]:
    """Start `command` (an external metrics server listening on localhost:`port`, see
    `server_flags`), register it, wait until the API serves it; yields its log file. The
    APIService is deleted after: one without its server would break discovery (and namespace
    deletion) for every later test of the session."""
    with log.open("wb") as output:
        server = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
            **popen,
        )
    try:
        register_external_metrics(kube, namespace, port)

        def served() -> bool:
            assert server.poll() is None, log.read_text(errors="replace")[-8000:]
            return kube.get(EXTERNAL_METRICS)[0] == 200

        wait_until(served, timeout=120, interval=0.25)
        yield log
    finally:
        kube.kubectl("delete", "apiservice", API_SERVICE, "--ignore-not-found")
        stop_process(server)


@contextlib.contextmanager
def prometheus_adapter(
    binary: Path, kube: ControlPlane, prometheus: PrometheusServer, namespace: str, folder: Path
) -> Iterator[Path]:
    """prometheus-adapter reading `prometheus` with the chart's rules, serving the external
    metrics API (`serve_external_metrics`); yields its log file."""
    port = free_port()
    command = [
        str(binary),
        *server_flags(kube, port, folder / "certs"),
        f"--prometheus-url={prometheus.url}/",
        f"--config={ADAPTER_RULES}",
        "--metrics-relist-interval=1s",
        "--v=2",
    ]
    log = folder / "prometheus-adapter.log"
    with serve_external_metrics(command, kube, namespace, port, log) as served:
        yield served
