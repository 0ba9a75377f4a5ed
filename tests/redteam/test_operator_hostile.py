"""The operator with the largest hostile schedule a Queue may hold (issue 29): a 3,000-character
schedule string held the operator's liveness endpoint for 21.6 s and another Queue's Ready for
35 s, so a liveness probe would have restarted the operator for every tenant. Now the check is
linear and bounded: both Queues get Ready, and every liveness check meanwhile answers."""

from __future__ import annotations

import pytest

from tablequeue.limits import MAX_SCHEDULE_TEMPLATE_BYTES
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import Operator, apply, condition_is, queue, secret
from tests.support.waiting import wait_until

HOSTILE = "{{" + " " * (MAX_SCHEDULE_TEMPLATE_BYTES // 2)


@pytest.mark.timeout(300)
def test_a_queue_with_the_largest_hostile_schedule_stalls_neither_the_operator_nor_others(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    schedule = {"name": "hostile", "cron": "0 2 * * *", "message": {"text": HOSTILE}}
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("hostile", namespace, schedules=[schedule]),
        queue("other", namespace),
    )
    ready = [condition_is(kube, name, namespace, "Ready", "True") for name in ("hostile", "other")]
    answers: list[int] = []

    def both_ready_and_still_live() -> bool:
        answers.append(operator.liveness()[0])  # bounded by 5 s, as a probe is
        return all(check() is not None for check in ready)

    wait_until(both_ready_and_still_live, timeout=60)
    assert set(answers) == {200}, answers
