"""Markers from what a test needs, so a developer can run a fast subset (`-m "not slow"`):

- `kube`: a real kube-apiserver + etcd (the `kube` fixture, directly or through another fixture);
- `node`: a control plane with a real node that runs pods (the `node_cluster` fixture);
- `browser`: headless Chromium (the `browser` fixture);
- `spark`: a local Spark session (the `spark` fixture);
- `slow`: any of those, or real worker processes and long generated-input runs.

It also orders the run for scripts/test, which builds the Go tools (the control plane, the node,
the deployment tools) beside the tests on a machine that has not built them yet: modules that
need none of them first, then the node's (the longest module, so that it does not end the run),
then the other modules that need a Go tool. A fixture that needs one waits for its build.
xdist keeps this order with `--no-loadscope-reorder`.

Loaded by tests/conftest.py (`pytest_plugins`); the markers themselves are declared in
pyproject.toml, with `--strict-markers`.
"""

from __future__ import annotations

import pytest

NEEDS = {"kube": "kube", "node_cluster": "node", "browser": "browser", "spark": "spark"}
"""Fixture name -> the marker a test that uses it gets."""

SLOW_FIXTURES = {"kube", "node_cluster", "browser", "spark", "start_worker", "worker_processes"}
GO_BUILT_FIXTURES = {"kube", "node_cluster", "deploy_tools"}
"""Fixtures that need what scripts/build-go-tools builds."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        for fixture, marker in NEEDS.items():
            if fixture in fixtures:
                item.add_marker(marker)
        if fixtures & SLOW_FIXTURES:
            item.add_marker("slow")
    items[:] = sorted(items, key=_module_ranks(items).__getitem__)


def _module_ranks(items: list[pytest.Item]) -> dict[pytest.Item, int]:
    """Each test's place in the run: its module's rank, 0 (needs no Go tool), 1 (runs pods on the
    node) or 2 (needs another Go tool). sorted() keeps the collection order within a rank."""
    needs: dict[str, set[str]] = {}
    for item in items:
        needs.setdefault(str(item.path), set()).update(getattr(item, "fixturenames", ()))
    ranks = {
        module: 1 if "node_cluster" in fixtures else 2 if fixtures & GO_BUILT_FIXTURES else 0
        for module, fixtures in needs.items()
    }
    return {item: ranks[str(item.path)] for item in items}
