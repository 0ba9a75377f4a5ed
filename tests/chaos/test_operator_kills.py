"""The operator killed (SIGKILL) again and again while it applies a batch of Queues: after a
restart every Queue is Ready with exactly one table, one registry row and one Deployment, and
nothing is duplicated (tables, registry rows, Deployments, ReplicaSets, creation Events)."""

from __future__ import annotations

import time

import sqlalchemy as sa

from tablequeue import connect
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import (
    Operator,
    apply,
    conditions,
    events,
    operator,
    operator_kubeconfig,
    queue,
    secret,
    warnings_but_index_lock_retries,
)
from tests.support.waiting import wait_until

__all__ = ["operator", "operator_kubeconfig"]  # fixtures, for this module

QUEUES = 12
KILLS = 3


def _queue_tables(url: str) -> list[str]:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        return sorted(t for t in sa.inspect(engine).get_table_names() if t.startswith("q"))
    finally:
        engine.dispose()


def _ready(kube: ControlPlane, namespace: str) -> list[str]:
    items = kube.kubectl_json("get", "queues", "-n", namespace)["items"]
    return sorted(
        q["metadata"]["name"]
        for q in items
        if conditions(q).get("Ready", {}).get("status") == "True"
    )


def test_operator_killed_mid_reconcile_duplicates_nothing(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    names = [f"q{n:02d}" for n in range(QUEUES)]
    started = time.monotonic()
    operator.kill()  # the batch lands while no operator runs; each start then works through it
    apply(kube, secret("db", namespace, postgres_url), *(queue(n, namespace) for n in names))
    mid_batch = 0
    for _ in range(KILLS):
        before = len(_queue_tables(postgres_url))
        operator.start()
        # Kill as soon as this start has made a table: it is then inside the batch.

        def made_a_table(before: int = before) -> bool:
            return len(_queue_tables(postgres_url)) > before

        wait_until(made_a_table, timeout=60, interval=0.05)
        operator.kill()
        mid_batch += len(_queue_tables(postgres_url)) < QUEUES
    tables_at_last_kill = len(_queue_tables(postgres_url))
    operator.start()

    assert wait_until(lambda: _ready(kube, namespace) == names or None, timeout=120, interval=0.5)
    recovered = time.monotonic() - started
    assert _queue_tables(postgres_url) == names
    with connect(postgres_url) as db:
        registry = sorted(q["name"] for q in db.queues())
    assert registry == names  # one row each: a duplicate would show twice
    deployments = kube.kubectl_json("get", "deployments", "-n", namespace)["items"]
    assert sorted(d["metadata"]["name"] for d in deployments) == [f"{n}-workers" for n in names]
    replicasets = kube.kubectl_json("get", "replicasets", "-n", namespace)["items"]
    assert len(replicasets) == QUEUES  # no Pod template changed across the restarts
    posted = [(e["reason"], e["message"]) for e in events(kube, namespace)]
    for name in names:
        assert posted.count(("Workers", f"created Deployment {name}-workers")) <= 1
        assert posted.count(("Table", f"table {name} created")) <= 1
    assert not warnings_but_index_lock_retries(kube, namespace)
    print(
        f"\n{QUEUES} Queues applied, operator SIGKILLed {KILLS} times"
        f" ({mid_batch} inside the batch, {tables_at_last_kill}/{QUEUES} tables at the last"
        f" kill), all Ready {recovered:.1f} s after the batch: tables {len(names)},"
        f" registry rows {len(registry)}, Deployments {len(deployments)},"
        f" ReplicaSets {len(replicasets)}, duplicates 0"
    )
    assert mid_batch >= 1, "no kill landed inside the batch"
