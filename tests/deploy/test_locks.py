"""The images' lock files follow pyproject.toml: requirements/runtime.lock (the operator image) pins
every dependency and those of the engine extras both images carry (PyMySQL, pyodbc),
requirements/worker.in (the worker image's) names every one of them but the operator's."""

from __future__ import annotations

import re
import tomllib

from tests.support.deploy_tools import REPO

OPERATOR_ONLY = {"kopf", "kubernetes"}
IMAGE_EXTRAS = ("mysql", "odbc")
"""The extras both images install: PyMySQL (MariaDB), pyodbc (MariaDB and SQL Server)."""


def name(requirement: str) -> str:
    """A requirement's distribution name, normalized (PEP 503)."""
    found = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert found, requirement
    return re.sub(r"[-_.]+", "-", found.group()).lower()


def dependencies() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = [project["optional-dependencies"][extra] for extra in IMAGE_EXTRAS]
    requirements = project["dependencies"] + [each for extra in extras for each in extra]
    return {name(requirement) for requirement in requirements}


def pinned(lock: str) -> set[str]:
    text = (REPO / "requirements" / lock).read_text()
    return {name(line) for line in text.splitlines() if re.match(r"[A-Za-z0-9]", line)}


def test_locks_runtime_lock_pins_every_dependency() -> None:
    assert dependencies() <= pinned("runtime.lock")
    assert {"pymysql", "pyodbc"} <= dependencies()


def test_locks_worker_in_is_the_dependencies_but_the_operators() -> None:
    lines = (REPO / "requirements" / "worker.in").read_text().splitlines()
    named = {name(line) for line in lines if line and not line.startswith(("#", "-"))}
    assert named == dependencies() - OPERATOR_ONLY
    assert dependencies() - OPERATOR_ONLY <= pinned("worker.lock")
    assert not OPERATOR_ONLY & pinned("worker.lock")


def test_locks_worker_lock_agrees_with_runtime_lock() -> None:
    def versions(lock: str) -> dict[str, str]:
        text = (REPO / "requirements" / lock).read_text()
        return {name(a): b for a, b in re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", text, re.M)}

    worker, runtime = versions("worker.lock"), versions("runtime.lock")
    assert {k: v for k, v in worker.items() if runtime.get(k) != v} == {}
