"""Busy worker pods are the last removed on scale-in: the operator keeps each worker pod's
`controller.kubernetes.io/pod-deletion-cost` at its messages in flight, as its workers' heartbeats
say (`tablequeue_workers`: `host` is the pod's name, `POD_NAME`). The ReplicaSet controller
deletes the pods of lower cost first, whoever lowered the replica count (the operator, an HPA,
KEDA, a rollout).

The cost is bucketed (0, 1, 2, 4, 8, ...: the largest power of two not above the count) and
patched only when a pod's bucket changed: at most one PATCH per worker pod per tick, none while
the counts stay in their buckets (an idle queue costs no writes), and a pod whose in-flight count
moves between 2 and 3, or 4 and 7, costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tablequeue import WorkerInfo

from . import builders
from .kube import Kube

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


def bucket(in_flight: int) -> int:
    """0 for an idle pod, else the largest power of two not above `in_flight`."""
    return 0 if in_flight <= 0 else 1 << (in_flight.bit_length() - 1)


def in_flight_by_pod(workers: Iterable[WorkerInfo]) -> dict[str, int]:
    """Messages in flight per pod name, from the live workers' heartbeats (a restarted worker
    container may have left a stale row: what it held is no longer running)."""
    by_pod: dict[str, int] = {}
    for worker in workers:
        if worker.state == "live":
            by_pod[worker.host] = by_pod.get(worker.host, 0) + worker.in_flight
    return by_pod


def changes(pods: Sequence[Any], in_flight: dict[str, int]) -> dict[str, str]:
    """The annotation each pod needs, for the pods whose annotation differs: none for a pod being
    deleted (its cost no longer matters), and an idle pod without the annotation is left as it
    is (no annotation is cost 0)."""
    wanted: dict[str, str] = {}
    for pod in pods:
        if pod.metadata.deletion_timestamp is not None:
            continue
        name = pod.metadata.name
        cost = str(bucket(in_flight.get(name, 0)))
        current = (pod.metadata.annotations or {}).get(DELETION_COST)
        if current != cost and not (current is None and cost == "0"):
            wanted[name] = cost
    return wanted


def keep_deletion_costs(
    kube: Kube, name: str, namespace: str, workers: Iterable[WorkerInfo]
) -> int:
    """One LIST of the Queue's worker pods, and a PATCH of each whose cost changed; how many
    pods were patched. A pod deleted meanwhile is skipped."""
    pods = kube.pods(namespace, builders.labels(name))
    patched = 0
    for pod, cost in changes(pods, in_flight_by_pod(workers)).items():
        if kube.annotate_pod_if_present(pod, namespace, {DELETION_COST: cost}):
            patched += 1
    return patched
