"""The extras: what `tablequeue.extras` checks agrees with pyproject's extras, a refusal is one
line naming the packages and the `pip install`, and the core's optional uses (OpenTelemetry's
trace context, the worker's span export) degrade or refuse without their packages. The real
install without extras is tests/deploy/test_light_install.py."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tablequeue import extras, trace_context
from tablequeue.errors import TableQueueError
from tablequeue.extras import PACKAGES, MissingExtra, require

ROOT = Path(__file__).resolve().parents[2]
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _extras() -> dict[str, set[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        extra: {re.sub(r"[-_.]+", "-", re.match(r"[\w.-]+", r)[0]).lower() for r in requirements}  # type: ignore[index]
        for extra, requirements in project["optional-dependencies"].items()
    }


def test_every_checked_package_is_in_its_extra() -> None:
    declared = _extras()
    for extra, packages in PACKAGES.items():
        assert set(packages.values()) <= declared[extra], extra


def test_all_is_every_process_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    [everything] = project["optional-dependencies"]["all"]
    named = set(re.fullmatch(r"tablequeue\[(.*)\]", everything)[1].split(","))  # type: ignore[index]
    assert set(PACKAGES) | {"mysql", "odbc"} == named
    [tested] = [r for r in project["optional-dependencies"]["test"] if r.startswith("tablequeue[")]
    assert {"all", "pipeline"} <= set(re.fullmatch(r"tablequeue\[(.*)\]", tested)[1].split(","))  # type: ignore[index]


def test_the_core_dependencies_include_no_extras_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {re.match(r"[\w.-]+", r)[0].lower() for r in project["dependencies"]}  # type: ignore[index]
    for packages in PACKAGES.values():
        assert not core & set(packages.values())


def test_require_names_what_is_missing_and_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extras, "installed", lambda module: module != "prometheus_client")
    require("tablequeue worker", "otel")  # all there
    with pytest.raises(MissingExtra) as refused:
        require("tablequeue dev", "api", "worker")
    assert str(refused.value) == (
        "tablequeue dev needs prometheus-client, not installed: "
        "run pip install 'tablequeue[api,worker]'"
    )
    assert isinstance(refused.value, ImportError) and isinstance(refused.value, TableQueueError)


def test_installed_looks_without_importing() -> None:
    assert extras.installed("json")
    assert not extras.installed("no_such_package_tq")
    assert not extras.installed("no_such_package_tq.sub")


def test_without_opentelemetry_a_trace_context_passes_as_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    headers = {"traceparent": TRACEPARENT}
    assert trace_context.extract(headers) is not None  # installed here
    monkeypatch.setattr(trace_context, "available", lambda: False)
    assert trace_context.extract(headers) is None
    assert trace_context.attach_from(headers) is None
    assert trace_context.headers_from(headers) is None
    assert trace_context.with_context({"a": "b"}, None) == {"a": "b"}


def test_worker_tracing_without_the_otel_extra_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tablequeue.worker import otel

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)
    real = extras.installed
    monkeypatch.setattr(
        extras,
        "installed",
        lambda module: not module.startswith("opentelemetry.sdk") and real(module),
    )
    with pytest.raises(MissingExtra, match=r"pip install 'tablequeue\[otel\]'"):
        otel.provider_from_environment("orders")
