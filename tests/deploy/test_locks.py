"""The images' lock files follow pyproject.toml: requirements/runtime.lock pins every runtime
dependency (the package's and its extras' but the pipeline's and the tests'), and each image's
list names exactly what its processes need: requirements/worker.in (Dockerfile.worker: the worker
and the API, their spans, the engines), requirements/operator.in (Dockerfile.operator: the
operator and the engines) and requirements/pipeline.in (Dockerfile.pipeline: pyspark, matplotlib,
PyMySQL); each .lock pins its .in at runtime.lock's versions where they share a package."""

from __future__ import annotations

import re
import tomllib

import pytest

from tests.support.deploy_tools import REPO

IMAGES = {
    "worker": ("worker", "api", "otel", "mysql", "odbc"),
    "operator": ("operator", "mysql", "odbc"),
    "pipeline": ("pipeline", "mysql"),
}
"""Each image's extras: PyMySQL (MariaDB) and pyodbc (MariaDB and SQL Server) in both."""
RUNTIME_EXTRAS = ("worker", "api", "operator", "otel", "mysql", "odbc")
NEVER_IN = {
    "worker": {"kopf", "kubernetes"},
    "operator": {"fastapi", "uvicorn", "jinja2"},
    "pipeline": {"kopf", "kubernetes", "fastapi", "uvicorn"},
}
"""What an image must not carry (the kubernetes client alone is 128 MB installed)."""


def name(requirement: str) -> str:
    """A requirement's distribution name, normalized (PEP 503)."""
    found = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert found, requirement
    return re.sub(r"[-_.]+", "-", found.group()).lower()


def dependencies(*extras: str) -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    return {name(requirement) for requirement in requirements}


def pinned(lock: str) -> set[str]:
    text = (REPO / "requirements" / lock).read_text()
    return {name(line) for line in text.splitlines() if re.match(r"[A-Za-z0-9]", line)}


def versions(lock: str) -> dict[str, str]:
    text = (REPO / "requirements" / lock).read_text()
    return {name(a): b for a, b in re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", text, re.M)}


def test_locks_runtime_lock_pins_every_dependency() -> None:
    assert dependencies(*RUNTIME_EXTRAS) <= pinned("runtime.lock")
    assert "tablequeue" not in pinned("runtime.lock")
    assert {"pymysql", "pyodbc"} <= dependencies("mysql", "odbc")


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_locks_image_in_is_its_extras(image: str) -> None:
    lines = (REPO / "requirements" / f"{image}.in").read_text().splitlines()
    named = {name(line) for line in lines if line and not line.startswith(("#", "-"))}
    assert named == dependencies(*IMAGES[image])
    assert named <= pinned(f"{image}.lock")
    assert not NEVER_IN[image] & pinned(f"{image}.lock")


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_locks_image_lock_agrees_with_runtime_lock(image: str) -> None:
    """The pipeline's own packages (pyspark, matplotlib and theirs) are not in runtime.lock."""
    lock, runtime = versions(f"{image}.lock"), versions("runtime.lock")
    shared = lock if image != "pipeline" else {k: v for k, v in lock.items() if k in runtime}
    assert {k: v for k, v in shared.items() if runtime.get(k) != v} == {}
    assert {"sqlalchemy", "psycopg", "pydantic"} <= set(shared)


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_locks_dockerfile_installs_its_lock(image: str) -> None:
    dockerfile = (REPO / f"Dockerfile.{image}").read_text()
    assert f"-r /src/requirements/{image}.lock" in dockerfile
    ignore = (REPO / ".containerignore").read_text().splitlines()
    assert f"!requirements/{image}.lock" in ignore
