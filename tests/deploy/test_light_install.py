"""`pip install tablequeue` without extras, for real: the built wheel in a fresh virtualenv with
only the core's dependencies (from a wheelhouse pinned to requirements/runtime.lock, kept in the
cache: a second run needs no network). The library and the admin verbs work on SQLite; each
process command refuses in one line naming its extra; none of the extras' packages is there."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tablequeue.extras import PACKAGES

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tablequeue" / "light"
SOURCES = [
    "pyproject.toml",
    "README.md",
    "tablequeue",
    "worker",
    "api",
    "operator",
    "pipeline",
    "cli",
]
"""What the wheel is built from (the images' build context, tests/deploy/containers.py)."""
EXTRAS_ONLY = {
    "aiohttp",
    "prometheus-client",
    "python-json-logger",
    "fastapi",
    "uvicorn",
    "jinja2",
    "kopf",
    "kubernetes",
    "opentelemetry-api",
    "opentelemetry-sdk",
    "pyspark",
}
"""Distributions the light install must not bring."""
QUEUE_YAML = """\
apiVersion: tablequeue.dev/v1
kind: Queue
metadata:
  name: orders
spec: {}
"""

pytestmark = pytest.mark.slow


@dataclass
class Venv:
    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TABLEQUEUE_")}
        env.pop("PYTHONPATH", None)
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        return subprocess.run(
            list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=300
        )

    def site_packages(self) -> Path:
        [found] = self.root.glob("lib/python3*/site-packages")
        return found


def _pins() -> str:
    """name==version of every package runtime.lock pins (constraints for the wheelhouse)."""
    text = (ROOT / "requirements" / "runtime.lock").read_text()
    return "".join(f"{a}=={b}\n" for a, b in re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", text, re.M))


def _pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd="/")
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stdout}\n{result.stderr}"


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Venv]:
    work = tmp_path_factory.mktemp("light")
    # From a clean copy, as the images build it: setuptools would reuse a stale build/lib.
    source = work / "src"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            source.mkdir(exist_ok=True)
            shutil.copy(ROOT / name, source / name)
    _pip("wheel", "--no-deps", "--quiet", "--wheel-dir", str(work / "dist"), str(source))
    [wheel] = (work / "dist").glob("tablequeue-*.whl")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _pins()
    key = hashlib.sha256((pins + repr(project["dependencies"])).encode()).hexdigest()[:16]
    wheelhouse = CACHE / f"wheelhouse-{key}"
    if not (wheelhouse / "complete").exists():
        (work / "pins.txt").write_text(pins)
        # The core's dependencies only (no extras): what `pip install tablequeue` resolves.
        _pip(
            "download",
            "--quiet",
            "--only-binary=:all:",
            "--dest",
            str(wheelhouse),
            "--constraint",
            str(work / "pins.txt"),
            *project["dependencies"],
        )
        (wheelhouse / "complete").touch()
    # No `python -m venv` from the repository: its `operator/` would shadow the standard library's.
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True, cwd="/")
    venv = Venv(work / "venv")
    installed = venv.run(
        str(venv.bin / "pip"),
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-index",
        "--find-links",
        str(wheelhouse),
        str(wheel),
        cwd=work,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    yield venv


def _distributions(venv: Venv) -> set[str]:
    listed = venv.run(str(venv.bin / "pip"), "list", "--format=json", "--disable-pip-version-check")
    assert listed.returncode == 0, listed.stderr
    return {re.sub(r"[-_.]+", "-", d["name"]).lower() for d in json.loads(listed.stdout)}


def test_light_install_has_none_of_the_extras(light: Venv) -> None:
    distributions = _distributions(light)
    assert "tablequeue" in distributions
    assert not EXTRAS_ONLY & distributions
    for module in ("kubernetes", "kopf", "fastapi", "aiohttp", "prometheus_client"):
        result = light.run(str(light.bin / "python"), "-c", f"import {module}", cwd=light.root)
        assert result.returncode != 0, module
        assert "ModuleNotFoundError" in result.stderr


def test_light_install_imports_every_core_module(light: Venv) -> None:
    """The core (tablequeue/) imports without any extra; tablequeue.metrics, the worker's and
    the operator's, refuses in one line."""
    script = """
import importlib, pkgutil, tablequeue
from tablequeue.extras import MissingExtra
done = []
for info in pkgutil.walk_packages(tablequeue.__path__, "tablequeue."):
    top = info.name.split(".")[1]
    if top in {"worker", "api", "operator", "pipeline", "cli", "__main__"}:
        continue
    try:
        importlib.import_module(info.name)
    except MissingExtra as error:
        print("refused", info.name, error)
        continue
    done.append(info.name)
print("imported", len(done))
"""
    result = light.run(str(light.bin / "python"), "-c", script, cwd=light.root)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:-1] == [
        "refused tablequeue.metrics tablequeue.metrics needs prometheus-client, not installed: "
        "run pip install 'tablequeue[worker]' (or the operator extra)"
    ]
    assert int(lines[-1].split()[1]) > 30


def test_light_install_runs_the_admin_verbs_on_sqlite(light: Venv, tmp_path: Path) -> None:
    tq = str(light.bin / "tablequeue")
    assert light.run(tq, "--help").returncode == 0
    (tmp_path / "queue.yaml").write_text(QUEUE_YAML)
    db = f"sqlite:///{tmp_path / 'queues.db'}"
    steps = [
        (tq, "queue", "apply", "-f", str(tmp_path / "queue.yaml"), "--db", db),
        (tq, "enqueue", "orders", '{"OrderId": "A-1"}', "--id", "A-1", "--db", db),
        (tq, "enqueue", "orders", '{"OrderId": "A-2"}', "--db", db),
    ]
    for step in steps:
        result = light.run(*step, cwd=tmp_path)
        assert result.returncode == 0, f"{step}: {result.stdout}{result.stderr}"
    listed = light.run(tq, "messages", "orders", "--json", "--db", db, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "A-1" in listed.stdout and "A-2" in listed.stdout
    stats = light.run(tq, "stats", "orders", "--json", "--db", db, cwd=tmp_path)
    assert stats.returncode == 0, stats.stderr
    script = f"""
from tablequeue import connect
with connect({db!r}) as db:
    batch = db.queue("orders").lease(owner="me", batch_size=10)
    print(len(batch.messages))
"""
    leased = light.run(str(light.bin / "python"), "-c", script, cwd=tmp_path)
    assert (leased.returncode, leased.stdout.strip()) == (0, "2"), leased.stderr


@pytest.mark.parametrize(
    ("command", "extras"),
    [
        (["worker", "orders", "--handler", "python:m:f", "--db", "sqlite://"], "worker"),
        (["worker"], "worker"),
        (["api", "--db", "sqlite://"], "api"),
        (["operator"], "operator"),
        (["dev"], "api,worker"),
    ],
)
def test_light_install_process_commands_name_their_extra(
    light: Venv, command: list[str], extras: str
) -> None:
    result = light.run(str(light.bin / "tablequeue"), *command, cwd=light.root)
    assert result.returncode == 1
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: tablequeue {command[0]} needs ")
    assert line.endswith(f"not installed: run pip install 'tablequeue[{extras}]'")
    # --help still works: it needs none of the extra.
    helped = light.run(str(light.bin / "tablequeue"), command[0], "--help", cwd=light.root)
    assert helped.returncode == 0, helped.stderr


@pytest.mark.parametrize("package", ["worker", "api", "operator"])
def test_light_install_importing_a_process_package_names_its_extra(
    light: Venv, package: str
) -> None:
    result = light.run(
        str(light.bin / "python"), "-c", f"import tablequeue.{package}", cwd=light.root
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    missing = ", ".join(dict.fromkeys(PACKAGES[package].values()))
    assert last == (
        f"tablequeue.extras.MissingExtra: tablequeue {package} needs {missing}, "
        f"not installed: run pip install 'tablequeue[{package}]'"
    )
