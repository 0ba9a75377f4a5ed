"""The worker's metric series of one queue, labelled once where a series is used per message."""

from __future__ import annotations

from tablequeue import metrics
from tablequeue.models import Settled


class WorkerMetrics:
    """`labels()` costs per call: the series counted per message are labelled here, once."""

    def __init__(self, queue: str) -> None:
        self.queue = queue
        self.lost = metrics.worker_messages.labels(outcome="lost", queue=queue)
        self.queue_latency = metrics.worker_queue_latency_seconds.labels(queue=queue)
        self.processing_seconds = metrics.worker_processing_seconds.labels(queue=queue)
        self.lease_batches = metrics.worker_lease_batches.labels(queue=queue)
        self.timeout_errors = metrics.worker_errors.labels(kind="timeout", queue=queue)
        self.handler_errors = metrics.worker_errors.labels(kind="handler", queue=queue)
        self.paused = metrics.worker_queue_paused.labels(queue=queue)
        self.throttled = metrics.worker_throttled.labels(queue=queue)
        self._concurrency_limited = metrics.worker_concurrency_limited.labels(queue=queue)
        self._at_limit = metrics.worker_at_limit.labels(queue=queue)  # its deprecated name
        self.app_given_back = metrics.worker_app_given_back.labels(queue=queue)
        for what in metrics.PURGED_KINDS:  # 0 from the start: a rate, not "no data", until one
            metrics.worker_purged.labels(queue=queue, what=what)
        self._settled = {
            outcome: metrics.worker_messages.labels(outcome=outcome, queue=queue)
            for outcome in ("processed", "rescheduled", "retrying", "errored", "requeued")
        }
        self._settled["lost"] = self.lost
        self.processed = 0
        """Successes recorded since start (processed, deleted or rescheduled): heartbeats."""
        self.failed = 0
        """Failures recorded since start (retrying or Error): heartbeats."""

    def count_settled(self, settled: Settled) -> None:
        """Count what recording a batch of outcomes did, by outcome."""
        self.processed += settled.processed + settled.deleted + settled.rescheduled
        self.failed += settled.retrying + settled.errored
        for outcome, count in (
            ("processed", settled.processed + settled.deleted),
            ("rescheduled", settled.rescheduled),
            ("retrying", settled.retrying),
            ("errored", settled.errored),
            ("requeued", settled.requeued_newer_version),
            ("lost", settled.lease_lost),
        ):
            if count:
                self._settled[outcome].inc(count)

    def count_concurrency_limited(self) -> None:
        """A lease round found the queue's global concurrency reached."""
        self._concurrency_limited.inc()
        self._at_limit.inc()

    def count_released(self, count: int) -> None:
        """Unstarted messages given back at shutdown."""
        metrics.worker_messages.labels(outcome="released", queue=self.queue).inc(count)
