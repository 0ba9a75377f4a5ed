"""The worker's options: given on the command line or taken from the queue's `workers` settings."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field

from tablequeue.queue import Queue


@dataclass
class WorkerConfig:
    queue: str
    handler: str
    batch_size: int | None = None
    concurrency: int | None = None
    lease_seconds: float | None = None
    execution_timeout: float | None = None
    poll_min: float | None = None
    poll_max: float | None = None
    grace_period: float | None = None
    handler_timeout: float = 30.0
    sweep_interval: float = 30.0
    vacuum_interval: float = 2.0
    listen: bool = True
    host: str = "0.0.0.0"
    port: int = 9090
    owner: str = field(
        default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    )
    exit_when_idle: bool = False

    def resolve(self, queue: Queue) -> None:
        """Options not given on the command line come from the queue's `workers` settings."""
        workers = queue.spec.workers
        self.batch_size = self.batch_size or workers.batch_size
        self.concurrency = self.concurrency or workers.concurrency
        if self.lease_seconds is None:
            self.lease_seconds = float(queue.spec.lease_seconds)
        if self.execution_timeout is None:
            self.execution_timeout = workers.execution_timeout_seconds
        if self.poll_min is None:
            self.poll_min = workers.poll_interval.min_seconds
        if self.poll_max is None:
            self.poll_max = workers.poll_interval.max_seconds
        if self.grace_period is None:
            self.grace_period = workers.grace_period_seconds
