"""The tools the tests take from Go modules (scripts/build-go-tools: the control plane, the node,
the deployment tools). scripts/test builds them before pytest starts; pytest run by itself on a
machine that has not built them yet builds them here, as the tests need them.

- The order of the run: on a machine that has built them (asked with the build scripts'
  `--built`, which neither builds nor waits; scripts/test builds them first), the node's module
  first, then every other module, the longest first (`module_seconds`): no worker then ends the
  run alone with a long module started late. Otherwise the modules that need no Go tool first,
  then the node's (so that it does not end the run), then the other modules that need one, each
  group longest first. xdist keeps this order with `--no-loadscope-reorder`.
- A test that needs a Go tool waits for its build (the build scripts' lock; a missing tool is
  built then) before its timeout starts: the wait is the build's, not the test's. The node's
  module waits only for the control plane and what installs the chart (`chart_tools`); its
  Prometheus, HPA and KEDA scenarios take `deploy_tools`, and so wait for the rest.

Loaded by tests/conftest.py (`pytest_plugins`).
"""

from __future__ import annotations

import contextlib
import functools
import subprocess
from collections.abc import Generator

import pytest

from .deploy_tools import BUILD_SCRIPT as DEPLOY_TOOLS_BUILD
from .deploy_tools import CHART_INSTALL, find_deploy_tools
from .kube.control_plane import BUILD_SCRIPT as CONTROL_PLANE_BUILD
from .kube.control_plane import build_control_plane
from .module_seconds import seconds

CONTROL_PLANE_FIXTURES = {"kube", "node_cluster"}
DEPLOY_TOOLS_FIXTURES = {"deploy_tools", "chart_tools"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    ranks = _module_ranks(items)
    longest_first = {path: -seconds(path) for path in {item.path for item in items}}
    items[:] = sorted(items, key=lambda item: (ranks[item], longest_first[item.path]))


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # around pytest-timeout's timer
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    fixtures = set(getattr(item, "fixturenames", ()))
    # A build that fails here fails the test in its fixture, which builds again (and says why).
    with contextlib.suppress(Exception):
        if fixtures & CONTROL_PLANE_FIXTURES:
            _control_plane_built()
        if "deploy_tools" in fixtures:
            find_deploy_tools()
        elif "chart_tools" in fixtures:
            find_deploy_tools(*CHART_INSTALL)
    yield


@functools.cache
def _control_plane_built() -> None:
    build_control_plane()


def _module_ranks(items: list[pytest.Item]) -> dict[pytest.Item, int]:
    """Each test's place in the run: its module's rank, -1 (runs pods on the node, when the Go
    tools are built), 0 (every other module when they are built; else needs no Go tool), 1 (the
    node, while they are not) or 2 (needs another Go tool, while they are not). Within a rank
    the longest modules go first (`module_seconds`); sorted() keeps a module's own order."""
    needs: dict[str, set[str]] = {}
    for item in items:
        needs.setdefault(str(item.path), set()).update(getattr(item, "fixturenames", ()))
    go_tools = CONTROL_PLANE_FIXTURES | DEPLOY_TOOLS_FIXTURES
    built = _go_tools_built()
    node = -1 if any("node_cluster" in f for f in needs.values()) and built else 1
    later = 0 if built else 2
    ranks = {
        module: node if "node_cluster" in fixtures else later if fixtures & go_tools else 0
        for module, fixtures in needs.items()
    }
    return {item: ranks[str(item.path)] for item in items}


def _go_tools_built() -> bool:
    return all(
        subprocess.run([script, "--built"], stdout=subprocess.DEVNULL, check=False).returncode == 0
        for script in (CONTROL_PLANE_BUILD, DEPLOY_TOOLS_BUILD)
    )
