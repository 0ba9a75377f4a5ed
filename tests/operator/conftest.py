"""The operator's tests against a real control plane, run as in production; their fixtures and
shared helpers.

`python -m tablequeue operator` is a subprocess (timer every second) with the credentials of a
ServiceAccount bound to the ClusterRole of operator/rbac.yaml; Queues, Secrets and patches go
through kubectl; messages through the core library against real PostgreSQL databases. There is no
kubelet: Deployments, ReplicaSets, HPAs and garbage collection are real, Pods never run
(test_sidecar runs the worker sidecar as a local process, exactly as the Deployment describes it).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from typing import Any, TypeVar

import sqlalchemy as sa

from tablequeue import NewMessage, connect
from tablequeue.storage.registry import ensure_registry
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import (
    Operator,
    clusterwide_operator,
    events,
    get,
    operator,
    operator_kubeconfig,
)
from tests.support.waiting import wait_until

__all__ = ["clusterwide_operator", "operator", "operator_kubeconfig"]  # fixtures, for this folder

T = TypeVar("T")
POLL = 0.25
"""Between kubectl calls while waiting: each is a process, and this machine has two cores."""


def wait(check: Callable[[], T | None], timeout: float = 30.0) -> T:
    value = wait_until(check, timeout=timeout, interval=POLL)
    assert value is not None
    return value


def status_of(kube: ControlPlane, name: str, namespace: str) -> dict[str, Any]:
    found = get(kube, "queue", name, namespace)
    assert found is not None, f"queue {namespace}/{name} is gone"
    return dict(found.get("status") or {})


def replicas_of(kube: ControlPlane, name: str, namespace: str) -> int | None:
    deployment = get(kube, "deployment", f"{name}-workers", namespace)
    return None if deployment is None else deployment["spec"].get("replicas")


def ticks(operator: Operator, name: str) -> int:
    """How many times the operator's timer has observed a Queue (from its log)."""
    return operator.log().count(f"[{operator.namespace}/{name}] Timer 'observe' succeeded")


def wait_ticks(operator: Operator, name: str, count: int) -> None:
    """Let the timer observe a Queue `count` more times: to show that something does *not*
    happen, wait for the chances it had, not for a guessed time."""
    start = ticks(operator, name)
    wait(lambda: ticks(operator, name) >= start + count, timeout=count * 5 + 10)


def _shared_tables() -> list[str]:
    """The tables `ensure_registry` makes beside the queue tables (registry, rollup, schedules,
    subscriptions, ...), asked of the code on a throwaway SQLite file, sorted."""
    with tempfile.TemporaryDirectory() as folder, connect(f"sqlite:///{folder}/shared.db") as db:
        ensure_registry(db)
        names = sa.inspect(db.engine).get_table_names()
    return sorted(name for name in names if name.startswith("tablequeue_"))


SHARED_TABLES = _shared_tables()
"""The tables every database with queues has (made with the registry)."""


def table_names(url: str) -> list[str]:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        return sorted(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def messages(count: int, **fields: Any) -> list[NewMessage]:
    return [NewMessage(message={"n": n}, **fields) for n in range(count)]


def warnings(kube: ControlPlane, namespace: str, name: str) -> list[dict[str, Any]]:
    return [e for e in events(kube, namespace, name) if e["type"] == "Warning"]


def patch(kube: ControlPlane, name: str, namespace: str, spec: dict[str, Any]) -> None:
    kube.kubectl(
        "patch", "queue", name, "-n", namespace, "--type=merge", "-p", json.dumps({"spec": spec})
    )
