"""Markers from what a test needs, so a developer can run a fast subset (`-m "not slow"`):

- `kube`: a real kube-apiserver + etcd (the `kube` fixture, directly or through another fixture);
- `node`: a control plane with a real node that runs pods (the `node_cluster` fixture);
- `browser`: headless Chromium (the `browser` fixture);
- `spark`: a local Spark session (the `spark` fixture);
- `slow`: any of those, or real worker processes and long generated-input runs.

Loaded by tests/conftest.py (`pytest_plugins`); the markers themselves are declared in
pyproject.toml, with `--strict-markers`.
"""

from __future__ import annotations

import pytest

NEEDS = {"kube": "kube", "node_cluster": "node", "browser": "browser", "spark": "spark"}
"""Fixture name -> the marker a test that uses it gets."""

SLOW_FIXTURES = {"kube", "node_cluster", "browser", "spark", "start_worker", "worker_processes"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        for fixture, marker in NEEDS.items():
            if fixture in fixtures:
                item.add_marker(marker)
        if fixtures & SLOW_FIXTURES:
            item.add_marker("slow")
