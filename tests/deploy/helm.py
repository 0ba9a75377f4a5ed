"""Running helm (and the tools that go with it) on charts/tablequeue, for the chart's tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support.deploy_tools import CHART, REPO, DeployTools

KUBE_VERSION = "1.36.3"
"""What `helm template` renders for: the test control plane's release."""
REQUIRED_VALUES = ["--set", "api.database.secretRef.name=tablequeue-db"]
"""The one value the chart cannot default: the Secret with the API's database URL."""
PROMETHEUS_OPERATOR = ["--api-versions", "monitoring.coreos.com/v1"]
"""What a cluster with prometheus-operator's CRDs tells helm (the monitors need it)."""


def tool_env(tools: DeployTools, home: Path, kubeconfig: Path | None = None) -> dict[str, str]:
    """helm's folders under `home` (nothing in the user's), the tools and .venv/bin on PATH (ct
    runs helm, yamllint and yamale)."""
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        "PATH": f"{tools.helm.parent}:{REPO / '.venv' / 'bin'}:{os.environ['PATH']}",
    }
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    return env


def run(
    command: list[str | Path], env: dict[str, str], stdin: str | None = None, cwd: Path = REPO
) -> str:
    """Run a tool; on failure the assertion shows what it said."""
    result = subprocess.run(
        [str(part) for part in command],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, (
        f"{' '.join(str(p) for p in command)} exited {result.returncode}:\n"
        f"{result.stdout[-6000:]}\n{result.stderr[-6000:]}"
    )
    return result.stdout


def template(tools: DeployTools, home: Path, *values: str, namespace: str = "tablequeue") -> str:
    """`helm template` of the chart (release `tq`) with REQUIRED_VALUES and `values`."""
    return run(
        [
            tools.helm,
            "template",
            "tq",
            CHART,
            "--namespace",
            namespace,
            "--kube-version",
            KUBE_VERSION,
            *REQUIRED_VALUES,
            *values,
        ],
        tool_env(tools, home),
    )


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def by_kind(text: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Rendered objects by (kind, name)."""
    return {(d["kind"], d["metadata"]["name"]): d for d in documents(text)}
