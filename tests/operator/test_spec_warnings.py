"""A Queue whose poll interval is outside NServiceBus's guidance (100 ms to 10 s) becomes ready
all the same, with a Warning Event (reason SpecWarning) and a line in the operator's log that
name the setting (tests/core/test_spec_warnings.py: a Queue inside the guidance has none)."""

from __future__ import annotations

import pytest

from tests.operator.conftest import wait, warnings
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import Operator, apply, queue, secret, wait_ready

pytestmark = pytest.mark.timeout(600)

SLOW = "workers.pollInterval.maxSeconds 30 is above 10 s"


def test_a_poll_interval_outside_the_guidance_is_a_warning_not_a_refusal(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("slow", namespace, workers={"pollInterval": {"minSeconds": 0.5, "maxSeconds": 30}}),
    )
    wait_ready(kube, "slow", namespace)

    def spec_warnings() -> list[str] | None:
        found = [e["message"] for e in warnings(kube, namespace, "slow")]
        return found or None

    [message] = wait(spec_warnings)
    assert message.startswith(SLOW)
    assert [e["reason"] for e in warnings(kube, namespace, "slow")] == ["SpecWarning"]
    wait(lambda: SLOW in operator.log() or None)
    assert f"[{namespace}/slow] {SLOW}" in operator.log()
