"""Where the deployment tests' tools are: helm, ct, kubeconform, Prometheus and promtool,
prometheus-adapter and KEDA (built by scripts/build-deploy-tools into the user's cache folder),
the container tools, the third-party CRDs and kubeconform's schemas.

The first test that needs them runs the build script, which waits for a build under way (its
lock) and builds only what is missing. A missing package fails the test that needs it, naming the
script that installs it: nothing is skipped. The fixtures `deploy_tools` (all of them) and
`chart_tools` (what installs the chart: the others may still be building), of session scope, are
imported by the conftest of each folder that uses them:

    from tests.support.deploy_tools import chart_tools, deploy_tools
"""

from __future__ import annotations

import functools
import importlib.util
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "scripts" / "build-deploy-tools"
SETUP_SCRIPT = REPO / "scripts" / "setup-deploy"
SCHEMA_SCRIPT = REPO / "tools" / "deploy" / "kubeconform_schemas.py"
CHART = REPO / "charts" / "tablequeue"
ADAPTER_RULES = CHART / "files" / "adapter-rules.yaml"
PYTHON_TOOLS = {"grafana_foundation_sdk": "deploy/dashboard.py", "yamllint": "ct", "yamale": "ct"}
"""Modules of requirements/deploy-dev.txt, and who needs them."""
"""prometheus-adapter's rules for the external metric tablequeue_backlog (its config file)."""


class DeployToolMissing(AssertionError):
    """A tool the deployment tests need is not installed; the message says how to install it."""


@dataclass(frozen=True)
class DeployTools:
    root: Path
    """The cache folder of scripts/build-deploy-tools (bin/, etc/, crds/, schemas/)."""

    @property
    def helm(self) -> Path:
        return self.root / "bin" / "helm"

    @property
    def ct(self) -> Path:
        return self.root / "bin" / "ct"

    @property
    def ct_config(self) -> Path:
        """ct's chart_schema.yaml and lintconf.yaml (ct looks for them next to its binary's
        etc/, in ~/.ct or /etc/ct: pass `--chart-yaml-schema` and `--lint-conf` from here)."""
        return self.root / "etc"

    @property
    def kubeconform(self) -> Path:
        return self.root / "bin" / "kubeconform"

    @property
    def prometheus_adapter(self) -> Path:
        return self.root / "bin" / "prometheus-adapter"

    @property
    def keda_operator(self) -> Path:
        """KEDA's operator (its cmd/operator, the version of tools/deploy/keda/go.mod)."""
        return self.root / "bin" / "keda-operator"

    @property
    def keda_adapter(self) -> Path:
        """KEDA's metrics API server (its cmd/adapter, the same version)."""
        return self.root / "bin" / "keda-adapter"

    @property
    def crds(self) -> Path:
        """keda/*.yaml (KEDA's CRDs) and prometheus-operator/*.yaml (ServiceMonitor, PodMonitor,
        PrometheusRule), from their Go modules."""
        return self.root / "crds"

    @property
    def keda_crds(self) -> list[Path]:
        return sorted((self.crds / "keda").glob("*.yaml"))

    @property
    def prometheus_operator_crds(self) -> list[Path]:
        return sorted((self.crds / "prometheus-operator").glob("*.yaml"))

    @property
    def schemas(self) -> Path:
        """kubeconform's strict schemas of every Kubernetes kind and the third-party CRDs."""
        return self.root / "schemas"

    @property
    def prometheus(self) -> Path:
        """Prometheus 3 with its Kubernetes service discovery (and no other)."""
        return self.root / "bin" / "prometheus"

    @property
    def promtool(self) -> Path:
        return self.root / "bin" / "promtool"

    def kubeconform_schema_location(self, folder: Path) -> str:
        """A `-schema-location` for kubeconform that finds the schemas in `folder`."""
        return str(folder / "{{ .ResourceKind }}{{ .KindSuffix }}.json")

    def crd_schemas(self, out: Path, *crds: Path) -> Path:
        """kubeconform schemas of more CRDs (e.g. crds/queue.yaml) in `out`, made now."""
        subprocess.run(
            [str(REPO / ".venv" / "bin" / "python"), str(SCHEMA_SCRIPT), "--out", str(out)]
            + [str(crd) for crd in crds],
            check=True,
            capture_output=True,
            cwd="/",
        )
        return out


def system_tool(name: str) -> Path:
    """A program installed by scripts/setup-deploy (podman, buildah, containerd, ...)."""
    found = shutil.which(name)
    if found is None:
        raise DeployToolMissing(f"{name} is not installed: run {SETUP_SCRIPT}")
    return Path(found)


CHART_INSTALL = ("helm", "crds")
"""What installing the chart on a cluster needs (helm; the prometheus-operator CRDs it monitors
with), built first: a test that needs only these need not wait for Prometheus and KEDA."""


@functools.cache
def find_deploy_tools(*tools: str) -> DeployTools:
    """The built tools, all of them or those named (see scripts/build-deploy-tools; built now if
    they are not yet: minutes, progress on stderr); DeployToolMissing (naming the script to run)
    if a Python tool is missing or the build fails."""
    for module, user in PYTHON_TOOLS.items():
        if importlib.util.find_spec(module) is None:
            raise DeployToolMissing(f"{module} (for {user}) is not installed: run {SETUP_SCRIPT}")
    result = subprocess.run(
        [str(BUILD_SCRIPT), *tools], stdout=subprocess.PIPE, text=True, check=False
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise DeployToolMissing(f"{BUILD_SCRIPT} failed with exit code {result.returncode}")
    return DeployTools(Path(lines[-1]))


@pytest.fixture(scope="session")
def deploy_tools() -> DeployTools:
    """helm, ct, kubeconform, prometheus-adapter, KEDA's operator, promtool, prometheus, CRDs and
    schemas; a test that takes it fails, saying which script to run, when they are not installed."""
    return find_deploy_tools()


@pytest.fixture(scope="session")
def chart_tools() -> DeployTools:
    """The tools of CHART_INSTALL only (the others may still be building)."""
    return find_deploy_tools(*CHART_INSTALL)
