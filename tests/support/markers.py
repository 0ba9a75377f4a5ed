"""Markers from what a test needs, so a developer can run a fast subset (`-m "not slow"`), and
the pytest-xdist groups that keep what must not run twice at once on one worker:

- `kube`: a real kube-apiserver + etcd (the `kube` fixture, directly or through another fixture);
- `browser`: headless Chromium (the `browser` fixture);
- `spark`: a local Spark session (the `spark` fixture);
- `slow`: any of those, or real worker processes and long generated-input runs.

scripts/test runs the suite with `--dist loadgroup`: every pipeline test goes to one worker
(each starts a JVM: the session's Spark of a gigabyte, or a spark-submit of its own, and two at
once starve a 2-core machine), and every test that builds or runs the
images goes to one worker (two builds of one tag at once would race in podman's storage).
Everything else is handed out test by test; each worker has its own throwaway servers and
control plane (the session fixtures), so tests on different workers share nothing.

Loaded by tests/conftest.py (`pytest_plugins`); the markers themselves are declared in
pyproject.toml, with `--strict-markers`.
"""

from __future__ import annotations

import pytest

NEEDS = {"kube": "kube", "browser": "browser", "spark": "spark"}
"""Fixture name -> the marker a test that uses it gets."""

SLOW_FIXTURES = {"kube", "browser", "spark", "start_worker", "worker_processes"}

XDIST_GROUPS = {"spark": "spark", "worker_image": "images", "operator_image": "images"}
"""Fixture name -> the pytest-xdist group of a test that uses it."""
FOLDER_GROUPS = {"pipeline": "spark"}
"""Test folder -> the pytest-xdist group of every test in it."""


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        for fixture, marker in NEEDS.items():
            if fixture in fixtures:
                item.add_marker(marker)
        if fixtures & SLOW_FIXTURES:
            item.add_marker("slow")
        groups = {XDIST_GROUPS[fixture] for fixture in fixtures & XDIST_GROUPS.keys()}
        if item.path.parent.name in FOLDER_GROUPS:
            groups.add(FOLDER_GROUPS[item.path.parent.name])
        for group in groups:
            item.add_marker(pytest.mark.xdist_group(group))
