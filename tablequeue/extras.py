"""The optional parts of tablequeue and the packages each needs (pyproject's extras).

`pip install tablequeue` is the library and the `tablequeue` command's admin verbs; the processes
need their extra: `tablequeue[worker]`, `[api]`, `[operator]`, `[otel]` (the worker's span
export). `require` refuses, in one line that names the missing packages and the `pip install` to
run, before anything imports them: each process package calls it first thing, and the CLI before
it parses a process command's options.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping

from .errors import TableQueueError

PACKAGES: Mapping[str, Mapping[str, str]] = {
    "worker": {
        "aiohttp": "aiohttp",
        "prometheus_client": "prometheus-client",
        "pythonjsonlogger": "python-json-logger",
    },
    "api": {
        "fastapi": "fastapi",
        "uvicorn": "uvicorn",
        "jinja2": "jinja2",
        "prometheus_client": "prometheus-client",
        "pythonjsonlogger": "python-json-logger",
    },
    "operator": {
        "kopf": "kopf",
        "kubernetes": "kubernetes",
        "prometheus_client": "prometheus-client",
    },
    "otel": {
        "opentelemetry.sdk": "opentelemetry-sdk",
        "opentelemetry.exporter.otlp.proto.http": "opentelemetry-exporter-otlp-proto-http",
    },
}
"""Extra -> {module it imports: distribution that provides it}: what `require` checks."""


class MissingExtra(TableQueueError, ImportError):
    """A process or feature whose extra is not installed. An ImportError too, so code that
    tolerates a missing optional package tolerates this one."""


def installed(module: str) -> bool:
    """Whether `module` can be imported (found, not imported: nothing runs)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a parent package is missing
        return False


def missing(*extras: str) -> list[str]:
    """The distributions of these extras that are not installed, in order, each once."""
    found: list[str] = []
    for extra in extras:
        for module, distribution in PACKAGES[extra].items():
            if distribution not in found and not installed(module):
                found.append(distribution)
    return found


def install_command(*extras: str) -> str:
    return f"pip install 'tablequeue[{','.join(extras)}]'"


def require(what: str, *extras: str) -> None:
    """Refuse `what` (e.g. "tablequeue worker") unless the packages of `extras` are installed:
    MissingExtra says which are missing and the `pip install` that adds them."""
    absent = missing(*extras)
    if absent:
        raise MissingExtra(
            f"{what} needs {', '.join(absent)}, not installed: run {install_command(*extras)}"
        )
