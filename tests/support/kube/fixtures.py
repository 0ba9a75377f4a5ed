"""Fixtures for the operator's tests against a real control plane, and small helpers for them.

- `kube` (in tests/conftest.py): the session's control plane, with the Queue CRD installed;
- `operator_kubeconfig`: credentials of a ServiceAccount bound to the ClusterRole of
  `operator/rbac.yaml`, so the operator runs with exactly the privileges production gives it;
- `namespace`: a fresh namespace per test;
- `operator`: `python -m tablequeue operator` as a subprocess watching that namespace (timer
  every second), its output in a log file that is attached to the report of a failed test;
  `clusterwide_operator`: the same watching all namespaces.

tests/operator/conftest.py imports the fixtures for the operator's tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import die_with_parent, stop_process
from tests.support.waiting import wait_until

from ..ports import free_port
from .control_plane import ControlPlane

REPO = Path(__file__).resolve().parents[3]
RBAC_FILE = REPO / "operator" / "rbac.yaml"
OPERATOR_NAMESPACE = "tablequeue-system"
OPERATOR_ACCOUNT = "tablequeue-operator"
INTERVAL = 1.0
"""The operator's timer: seconds between status updates and scaling decisions."""

_OPERATOR_KEY = pytest.StashKey["Operator"]()


# --- the control plane ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def operator_kubeconfig(kube: ControlPlane) -> Path:
    """A kubeconfig of the ServiceAccount tablequeue-system/tablequeue-operator, bound to the
    ClusterRole of operator/rbac.yaml and to nothing else."""
    # Applied, not created: conftests of several folders import this fixture, and each import
    # is a fixture of its own, so one session may run it more than once.
    kube.kubectl("apply", "-f", str(RBAC_FILE))
    apply(
        kube,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": OPERATOR_ACCOUNT, "namespace": OPERATOR_NAMESPACE},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": OPERATOR_ACCOUNT},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "tablequeue-operator",
            },
            "subjects": [
                {
                    "kind": "ServiceAccount",
                    "name": OPERATOR_ACCOUNT,
                    "namespace": OPERATOR_NAMESPACE,
                }
            ],
        },
    )
    token = kube.kubectl(
        "create", "token", OPERATOR_ACCOUNT, "-n", OPERATOR_NAMESPACE, "--duration=2h"
    ).stdout.strip()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "test",
                "cluster": {
                    "server": kube.server,
                    "certificate-authority": str(kube.pki / "ca.crt"),
                },
            }
        ],
        "users": [{"name": OPERATOR_ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": OPERATOR_ACCOUNT}}],
        "current-context": "test",
    }
    path = kube.base / "operator-kubeconfig"
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


# --- the operator --------------------------------------------------------------------------------


class Operator:
    """`python -m tablequeue operator`, as its Deployment would run it: watching the test's
    namespace, or every namespace (`clusterwide`, the default in production)."""

    def __init__(
        self, kubeconfig: Path, namespace: str, log_path: Path, clusterwide: bool = False
    ) -> None:
        self.namespace = namespace
        self.clusterwide = clusterwide
        self.log_path = log_path
        self.metrics_port = free_port()
        self.liveness_port = free_port()
        self.env = {
            key: value for key, value in os.environ.items() if not key.startswith("KUBERNETES_")
        } | {"KUBECONFIG": str(kubeconfig), "PYTHONUNBUFFERED": "1"}
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "tablequeue",
            "operator",
            *([] if self.clusterwide else ["--namespace", self.namespace]),
            "--interval",
            str(INTERVAL),
            "--metrics-port",
            str(self.metrics_port),
            "--liveness-port",
            str(self.liveness_port),
        ]

    def start(self, timeout: float = 60.0) -> None:
        assert not self.alive, "already running"
        self.starts += 1
        with self.log_path.open("ab") as log:
            log.write(f"=== operator start {self.starts}: {' '.join(self.command)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.log_path.parent,  # not the repository: its operator/ is no package
                preexec_fn=die_with_parent,
            )
        self.wait_live(timeout)

    def wait_live(self, timeout: float = 60.0) -> None:
        def live() -> bool:
            if not self.alive:
                raise AssertionError(f"the operator exited:\n{self.log()[-6000:]}")
            return self.liveness()[0] == 200

        wait_until(live, timeout=timeout, interval=0.1)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """SIGTERM, as Kubernetes stops a Pod; SIGKILL if it does not exit in time."""
        if self.process is None:
            return
        stop_process(self.process)
        self._note(f"=== operator stopped, exit code {self.process.returncode}")

    def kill(self) -> None:
        """SIGKILL: a crash, or a node that vanished."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()
        self._note("=== operator killed")

    def restart(self) -> None:
        self.stop()
        self.start()

    def _note(self, line: str) -> None:
        with self.log_path.open("a") as log:
            log.write(line + "\n")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def liveness(self) -> tuple[int, str]:
        return _get(f"http://127.0.0.1:{self.liveness_port}/healthz")

    def metrics(self) -> str:
        status, text = _get(f"http://127.0.0.1:{self.metrics_port}/metrics")
        assert status == 200, (status, text)
        return text


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()
    except (urllib.error.URLError, OSError):
        return 0, ""


class _OperatorLogInReport:
    """Adds the operator's log to the report of a failed test that ran one."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        outcome = yield
        report = outcome.get_result()
        found = item.stash.get(_OPERATOR_KEY, None)
        if report.failed and found is not None:
            text = found.log()
            if len(text) > 60_000:
                text = "[...]\n" + text[-60_000:]
            report.sections.append((f"operator log ({found.log_path})", text))


def _run_operator(
    request: pytest.FixtureRequest, kubeconfig: Path, namespace: str, log: Path, clusterwide: bool
) -> Iterator[Operator]:
    plugins = request.config.pluginmanager
    if not plugins.has_plugin("tablequeue-operator-log"):
        plugins.register(_OperatorLogInReport(), "tablequeue-operator-log")
    running = Operator(kubeconfig, namespace, log, clusterwide)
    request.node.stash[_OPERATOR_KEY] = running
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def operator(
    request: pytest.FixtureRequest, operator_kubeconfig: Path, namespace: str, tmp_path: Path
) -> Iterator[Operator]:
    """The operator watching this test's namespace only."""
    yield from _run_operator(
        request, operator_kubeconfig, namespace, tmp_path / "operator.log", clusterwide=False
    )


@pytest.fixture
def clusterwide_operator(
    request: pytest.FixtureRequest, operator_kubeconfig: Path, namespace: str, tmp_path: Path
) -> Iterator[Operator]:
    """The operator watching every namespace, as the chart runs it by default. It also sees
    what earlier tests left behind (their Queues in Terminating namespaces)."""
    yield from _run_operator(
        request, operator_kubeconfig, namespace, tmp_path / "operator.log", clusterwide=True
    )


# --- manifests and reading them back -------------------------------------------------------------


def secret(name: str, namespace: str, url: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "stringData": {"url": url},
    }


def queue(name: str, namespace: str, secret_name: str = "db", **spec: Any) -> dict[str, Any]:
    """A Queue manifest; spec fields in camelCase, as a user writes them."""
    return {
        "apiVersion": "tablequeue.dev/v1",
        "kind": "Queue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"database": {"secretRef": {"name": secret_name}}} | spec,
    }


def apply(
    kube: ControlPlane, *manifests: dict[str, Any], check: bool = True
) -> subprocess.CompletedProcess[str]:
    """`kubectl apply -f -` of the manifests as one List."""
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(manifests)})
    return kube.kubectl("apply", "-f", "-", input=text, check=check)


def get(kube: ControlPlane, kind: str, name: str, namespace: str) -> dict[str, Any] | None:
    result = kube.kubectl("get", kind, name, "-n", namespace, "-o", "json", check=False)
    if result.returncode != 0:
        if "NotFound" in result.stderr:
            return None
        raise AssertionError(result.stderr)
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def conditions(resource: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The status conditions of a resource, by type."""
    found = ((resource or {}).get("status") or {}).get("conditions") or []
    return {c["type"]: c for c in found}


def condition_is(
    kube: ControlPlane, name: str, namespace: str, kind: str, status: str, reason: str | None = None
) -> Callable[[], dict[str, Any] | None]:
    """A check for wait_until: the Queue when its condition `kind` has `status` (and reason)."""

    def check() -> dict[str, Any] | None:
        resource = get(kube, "queue", name, namespace)
        found = conditions(resource).get(kind)
        if found and found["status"] == status and reason in (None, found.get("reason")):
            return resource
        return None

    return check


def events(kube: ControlPlane, namespace: str, name: str | None = None) -> list[dict[str, Any]]:
    """Events in the namespace (about one object), oldest first."""
    selector = ["--field-selector", f"involvedObject.name={name}"] if name else []
    found: list[dict[str, Any]] = kube.kubectl_json("get", "events", "-n", namespace, *selector)[
        "items"
    ]
    return sorted(found, key=lambda e: (e.get("lastTimestamp") or "", e["metadata"]["name"]))


INDEX_LOCK_RETRY = "another apply is building indexes"
"""The Warning of an operator started right after one was killed: the dead one's database session
may hold the index-building lock a moment longer than its process lives (PostgreSQL notices a
vanished client when the statement ends); the new one says so and retries (it waits 0 s)."""


def warnings_but_index_lock_retries(kube: ControlPlane, namespace: str) -> list[str]:
    """The messages of the namespace's Warning events, but for INDEX_LOCK_RETRY's."""
    return [
        e["message"]
        for e in events(kube, namespace)
        if e["type"] == "Warning" and INDEX_LOCK_RETRY not in e["message"]
    ]


def wait_ready(kube: ControlPlane, name: str, namespace: str, timeout: float = 30.0) -> Any:
    return wait_until(condition_is(kube, name, namespace, "Ready", "True"), timeout=timeout)
