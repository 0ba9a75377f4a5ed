"""Runtime subscriptions against a real control plane: the operator's reconcile rewrites a
Queue's spec.subscriptions and keeps the subscriptions made at runtime."""

from __future__ import annotations

import pytest

from tablequeue import connect
from tests.operator.conftest import wait
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import Operator, apply, queue, secret, wait_ready

pytestmark = pytest.mark.timeout(600)
ALLOWED = {"allowed": True, "maxExpiry": "7d"}


def test_a_reconcile_keeps_runtime_subscriptions(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    first = [{"topic": "order-placed"}]
    manifest = queue("mail", namespace, subscriptions=first, runtimeSubscriptions=ALLOWED)
    apply(kube, secret("db", namespace, postgres_url), manifest)
    wait_ready(kube, "mail", namespace)
    with connect(postgres_url) as db:
        db.subscribe("order-shipped", "mail", where="Total > 100")

        changed = [{"topic": "order-placed"}, {"topic": "order-cancelled"}]
        apply(kube, queue("mail", namespace, subscriptions=changed, runtimeSubscriptions=ALLOWED))

        def listed() -> list[tuple[str, str]]:
            return [(s.topic, s.origin) for s in db.list_subscriptions()]

        wait(lambda: ("order-cancelled", "spec") in listed() or None)
        assert listed() == [
            ("order-cancelled", "spec"),
            ("order-placed", "spec"),
            ("order-shipped", "runtime"),
        ]
        [runtime] = db.list_subscriptions("order-shipped")
        assert runtime.where == "Total > 100" and runtime.expires_at is not None
    assert "Traceback" not in operator.log()
