"""KEDA in the test control plane: its CRDs and its operator, both from KEDA's Go module (built by
scripts/build-deploy-tools into the user's cache folder).

The operator (`keda-operator`, KEDA's cmd/operator) runs out of cluster as a local process with the
control plane's admin kubeconfig, watching one namespace (WATCH_NAMESPACE, and the namespace of
its "cluster objects" and leader lease set to it too), leader election and certificate rotation
off (their defaults). It does the activation step itself, through the scale subresource: 0 -> 1
replica when a trigger becomes active, back to 0 after the cooldown. 1 -> N is the HPA's, on
KEDA's metrics API server (`keda_metrics_server`, KEDA's cmd/adapter), which asks the operator's
metrics gRPC server over mutual TLS: both take the CA, certificate and key in `--cert-dir`, the
control plane's CA and its `local-service` pair.

The fixtures are imported by the test modules that use them:

    from tests.support.keda import keda_crds, keda_operator
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.deploy_tools import SETUP_SCRIPT, DeployToolMissing, DeployTools
from tests.support.kube import ControlPlane
from tests.support.metrics_adapter import serve_external_metrics, server_flags
from tests.support.ports import free_port
from tests.support.processes import die_with_parent, stop_process
from tests.support.waiting import wait_until

_LOG_TAIL = 8000


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (urllib.error.URLError, OSError):
        return 0


@pytest.fixture(scope="session")
def keda_crds(kube: ControlPlane, deploy_tools: DeployTools) -> Iterator[None]:
    """KEDA's CRDs (from its Go module, by scripts/build-deploy-tools), installed for real."""
    crds = deploy_tools.keda_crds
    assert crds, f"no KEDA CRDs in {deploy_tools.crds}"
    for crd in crds:
        kube.kubectl("apply", "--server-side", "-f", str(crd))
    kube.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    wait_until(lambda: kube.kubectl("get", "scaledobjects", "-A", check=False).returncode == 0)
    yield


class KedaOperator:
    """KEDA's operator as a local process against the test control plane."""

    def __init__(self, binary: Path, kube: ControlPlane, namespace: str, folder: Path) -> None:
        self.binary = binary
        self.kube = kube
        self.namespace = namespace
        self.folder = folder
        self.log_path = folder / "keda-operator.log"
        self.certs = folder / "keda-certs"
        self.metrics_port = free_port()
        self.probe_port = free_port()
        self.metrics_service_port = free_port()
        """KEDA's gRPC metrics service, which its metrics API server asks."""
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def command(self) -> list[str]:
        return [
            str(self.binary),
            f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{self.probe_port}",
            f"--metrics-service-bind-address=127.0.0.1:{self.metrics_service_port}",
            f"--cert-dir={self.certs}",
            f"--ca-dir={self.certs}",
            "--leader-elect=false",
            "--enable-cert-rotation=false",
            "--zap-log-level=info",
        ]

    @property
    def env(self) -> dict[str, str]:
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        return inherited | {
            "KUBECONFIG": str(self.kube.kubeconfig),
            "WATCH_NAMESPACE": self.namespace,
            "KEDA_CLUSTER_OBJECT_NAMESPACE": self.namespace,
            "POD_NAMESPACE": self.namespace,
        }

    def start(self, timeout: float = 180.0) -> None:
        assert self.process is None, "already started"
        self.certs.mkdir(mode=0o700)
        pki = self.kube.pki
        for source, target in (
            ("ca.crt", "ca.crt"),
            ("local-service.crt", "tls.crt"),
            ("local-service.key", "tls.key"),
        ):
            shutil.copyfile(pki / source, self.certs / target)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.folder,
                preexec_fn=die_with_parent,
            )

        def ready() -> bool:
            assert self.alive, f"KEDA's operator exited:\n{self.log_tail()}"
            return _status(f"http://127.0.0.1:{self.probe_port}/readyz") == 200

        wait_until(ready, timeout=timeout, interval=0.25)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)

    def log_tail(self) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text[-_LOG_TAIL:]


@pytest.fixture
def keda_operator(
    kube: ControlPlane,
    keda_crds: None,
    deploy_tools: DeployTools,
    namespace: str,
    tmp_path: Path,
) -> Iterator[KedaOperator]:
    """KEDA's operator watching this test's namespace; fails, naming the setup script, when
    scripts/build-deploy-tools has not built it."""
    binary = deploy_tools.keda_operator
    if not os.access(binary, os.X_OK):
        raise DeployToolMissing(f"KEDA's operator is not built ({binary}): run {SETUP_SCRIPT}")
    running = KedaOperator(binary, kube, namespace, tmp_path)
    try:
        running.start()
        yield running
    finally:
        running.stop()


@contextlib.contextmanager
def keda_metrics_server(
    binary: Path, kube: ControlPlane, keda: KedaOperator, namespace: str, folder: Path
) -> Iterator[Path]:
    """KEDA's metrics API server (cmd/adapter) serving the external metrics of KEDA's HPAs
    through the API server's aggregation layer, asking `keda`'s gRPC metrics service with the
    same certificates (its cert dir: ca.crt, tls.crt, tls.key: the control plane's
    `local-service` pair, for server and client, valid for localhost). Yields its log file;
    unregistered and stopped after."""
    port = free_port()
    command = [
        str(binary),
        *server_flags(kube, port, keda.certs),
        f"--metrics-service-address=127.0.0.1:{keda.metrics_service_port}",
        "--metrics-service-grpc-authority=localhost",
    ]
    log = folder / "keda-metrics-server.log"
    with serve_external_metrics(
        command, kube, namespace, port, log, env=keda.env, cwd=folder
    ) as served:
        yield served
