"""A Queue paused by its spec and at runtime: the declared pause wins only when it changes, and
the status (field, `Paused` condition, printer column) reports what the database holds."""

from __future__ import annotations

from typing import Any

import pytest

from tablequeue import connect
from tests.operator.conftest import patch, status_of, wait, warnings
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import Operator, apply, conditions, get, queue, secret, wait_ready

pytestmark = pytest.mark.timeout(600)


def paused_status(kube: ControlPlane, namespace: str, paused: bool) -> dict[str, Any] | None:
    status = status_of(kube, "mail", namespace)
    condition = conditions({"status": status}).get("Paused", {})
    wanted = "True" if paused else "False"
    return status if status.get("paused") is paused and condition.get("status") == wanted else None


def reconciled(kube: ControlPlane, namespace: str, spec: dict[str, Any]) -> None:
    """Patch the spec and wait until the operator has reconciled that generation."""
    patch(kube, "mail", namespace, spec)
    resource = get(kube, "queue", "mail", namespace)
    assert resource is not None
    generation = resource["metadata"]["generation"]
    wait(lambda: status_of(kube, "mail", namespace).get("observedGeneration") == generation)


def test_pause_declared_and_at_runtime(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    apply(kube, secret("db", namespace, postgres_url), queue("mail", namespace, paused=True))
    wait_ready(kube, "mail", namespace)
    with connect(postgres_url) as db:
        status = wait(lambda: paused_status(kube, namespace, True))
        assert db.flow_state("mail").paused and status["pausedAt"]
        assert conditions({"status": status})["Paused"]["reason"] == "Paused"
        printed = kube.kubectl("get", "tq", "mail", "-n", namespace).stdout
        assert "PAUSED" in printed and "true" in printed

        db.resume("mail")  # at runtime: the unchanged spec does not pause it again
        wait(lambda: paused_status(kube, namespace, False))
        reconciled(kube, namespace, {"category": "Mail"})  # a new generation, same pause
        assert not db.flow_state("mail").paused

        reconciled(kube, namespace, {"paused": False})  # declared now: running, as it was
        db.pause("mail")
        wait(lambda: paused_status(kube, namespace, True))
        reconciled(kube, namespace, {"category": "Post"})
        assert db.flow_state("mail").paused  # spec.paused did not change
        reconciled(kube, namespace, {"paused": True})
        reconciled(kube, namespace, {"paused": False})  # the declaration changed: it wins
        wait(lambda: paused_status(kube, namespace, False))
        assert not db.flow_state("mail").paused
    assert not warnings(kube, namespace, "mail")
