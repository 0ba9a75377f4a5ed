"""The queue gauges the operator exports on its /metrics, one set of series per Queue."""

from __future__ import annotations

import contextlib

from tablequeue import QueueStats, metrics

from .databases import QueueKey


class QueueGauges:
    """Remembers which statuses each Queue exported, so that a status with no rows any more
    reads 0 and a deleted Queue leaves no series behind."""

    def __init__(self) -> None:
        self._exported_statuses: dict[QueueKey, set[str]] = {}

    def export(self, queue: QueueKey, stats: QueueStats) -> None:
        namespace, name = queue
        labels = {"namespace": namespace, "queue": name}
        exported = self._exported_statuses.setdefault(queue, set())
        for state in exported - stats.counts.keys():
            metrics.queue_messages.labels(status=state, **labels).set(0)
        for state, count in stats.counts.items():
            metrics.queue_messages.labels(status=state, **labels).set(count)
        exported.update(stats.counts)
        metrics.queue_backlog.labels(**labels).set(stats.backlog)
        metrics.operator_deletion_cost_patches.labels(**labels)  # 0 until a patch: not "no data"
        metrics.queue_oldest_pending_age.labels(**labels).set(stats.oldest_pending_seconds)
        healthy = stats.health in ("Healthy", "Disabled")
        metrics.queue_healthy.labels(**labels).set(1 if healthy else 0)

    def forget(self, queue: QueueKey) -> None:
        namespace, name = queue
        for state in self._exported_statuses.pop(queue, set()):
            with contextlib.suppress(KeyError):
                metrics.queue_messages.remove(namespace, name, state)
        for gauge in (
            metrics.queue_backlog,
            metrics.queue_oldest_pending_age,
            metrics.queue_healthy,
            metrics.operator_desired_replicas,
            metrics.operator_deletion_cost_patches,
        ):
            with contextlib.suppress(KeyError):
                gauge.remove(namespace, name)
