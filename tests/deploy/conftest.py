"""Fixtures of the deployment tests: the tools (tests/support/deploy_tools.py) and helm against
the session's control plane."""

from __future__ import annotations

from tests.support.deploy_tools import chart_tools, deploy_tools
from tests.support.kube.fixtures import operator_kubeconfig

__all__ = ["chart_tools", "deploy_tools", "operator_kubeconfig"]  # fixtures, for this folder
