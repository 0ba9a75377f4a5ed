"""The worker's metric series of one queue, labelled once where a series is used per message."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable
from typing import Any

from prometheus_client import Histogram

from tablequeue import metrics
from tablequeue.models import Settled


class Observations:
    """One histogram series observed once per message, added to the histogram in bulk: per
    message an append; per flush (outcomes taken for recording, every scrape, shutdown) one
    lock per bucket touched, instead of a sum and a bucket update per observation."""

    def __init__(self, histogram: Histogram) -> None:
        self._histogram = histogram
        self._pending: list[float] = []
        self.observe: Callable[[float], None] = self._pending.append

    def flush(self) -> None:
        if not self._pending:
            return
        values = self._pending.copy()
        self._pending.clear()
        histogram: Any = self._histogram  # prometheus_client's own series, as observe() updates
        bounds = histogram._upper_bounds  # ends with +Inf: every value has a bucket
        for index, count in Counter(bisect_left(bounds, value) for value in values).items():
            histogram._buckets[index].inc(count)
        histogram._sum.inc(math.fsum(values))


class WorkerMetrics:
    """`labels()` costs per call: the series counted per message are labelled here, once."""

    def __init__(self, queue: str) -> None:
        self.queue = queue
        self.lost = metrics.worker_messages.labels(outcome="lost", queue=queue)
        self.queue_latency = Observations(metrics.worker_queue_latency_seconds.labels(queue=queue))
        self.processing_seconds = Observations(
            metrics.worker_processing_seconds.labels(queue=queue)
        )
        self.lease_batches = metrics.worker_lease_batches.labels(queue=queue)
        self.timeout_errors = metrics.worker_errors.labels(kind="timeout", queue=queue)
        self.handler_errors = metrics.worker_errors.labels(kind="handler", queue=queue)
        self.paused = metrics.worker_queue_paused.labels(queue=queue)
        self.throttled = metrics.worker_throttled.labels(queue=queue)
        self._settled = {
            outcome: metrics.worker_messages.labels(outcome=outcome, queue=queue)
            for outcome in ("processed", "rescheduled", "retrying", "errored", "requeued")
        }
        self._settled["lost"] = self.lost
        self.processed = 0
        """Successes recorded since start (processed, deleted or rescheduled): heartbeats."""
        self.failed = 0
        """Failures recorded since start (retrying or Error): heartbeats."""

    def flush(self) -> None:
        """Add the pending per-message observations to the histograms."""
        self.queue_latency.flush()
        self.processing_seconds.flush()

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

    def count_released(self, count: int) -> None:
        """Unstarted messages given back at shutdown."""
        metrics.worker_messages.labels(outcome="released", queue=self.queue).inc(count)
