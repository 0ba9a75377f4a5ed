"""What every system shares: the message body, the consumer command line, the interface."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.worker import body

Row = dict[str, Any]
CONSUMER_BATCHES = (1, 100)

# The same ~150-byte order as bench.worker.body(i), built by the database (PostgreSQL).
BODY_SQL_PG = (
    "jsonb_build_object('OrderId', 'A-' || lpad(i::text, 8, '0'),"
    " 'Email', 'customer' || (i % 997) || '@example.com', 'Currency', 'NOK', 'Total', 39.8,"
    " 'Items', jsonb_build_array(jsonb_build_object('Sku', 'SKU-000123', 'Qty', 2,"
    " 'Price', 19.9)), 'Note', 'door')"
)
BODY_SQL_PG_PARAMS = BODY_SQL_PG.replace("%", "%%")  # inside a statement with %s parameters
BODY_SQL_SQLITE = (
    "json_object('OrderId', 'A-' || substr('00000000' || i, -8),"
    " 'Email', 'customer' || (i % 997) || '@example.com', 'Currency', 'NOK', 'Total', 39.8,"
    " 'Items', json_array(json_object('Sku', 'SKU-000123', 'Qty', 2, 'Price', 19.9)),"
    " 'Note', 'door')"
)


def bodies(n: int, first: int = 0) -> list[Row]:
    return [body(first + i) for i in range(n)]


class System:
    """One queue system on one database. The parent process drives it; consumers are children."""

    label = "?"
    engine = "postgresql"
    module = "?"
    batches: tuple[int, ...] = CONSUMER_BATCHES
    server_pid: int | None = None  # the database server's root process (bench.cpu), if any

    def __init__(self, url: str) -> None:
        self.url = url

    def create(self) -> str:
        """A fresh, empty queue; returns its name."""
        raise NotImplementedError

    def drop(self, queue: str) -> None:
        raise NotImplementedError

    def enqueue_each(self, queue: str, items: list[Row], deadline: float) -> int:
        """One enqueue call per message until `deadline` (perf_counter); returns the count."""
        raise NotImplementedError

    def enqueue_batches(self, queue: str, items: list[Row], size: int, deadline: float) -> int:
        raise NotImplementedError

    def fill(self, queue: str, n: int) -> None:
        """Make `n` messages visible at once (one transaction), in the system's own format."""
        raise NotImplementedError

    def remaining(self, queue: str) -> int:
        """Messages not yet finished."""
        raise NotImplementedError

    def relations(self, queue: str) -> list[str]:
        """Tables to report in the bloat workload."""
        raise NotImplementedError

    def consumer(
        self, queue: str, batch: int, ready: Path, latency: Path | None
    ) -> tuple[list[str], Callable[[], bool]]:
        """The consumer command line and a readiness check."""
        command = [sys.executable, "-m", self.module, "consume", self.url, queue, str(batch)]
        command.append(str(ready))
        if latency:
            command.append(str(latency))
        return command, ready.exists

    def close(self) -> None:
        pass


class ConsumerArgs:
    def __init__(self, argv: list[str]) -> None:
        if len(argv) < 6 or argv[1] != "consume":
            raise SystemExit("usage: python -m bench.systems.X consume URL QUEUE BATCH READY [LAT]")
        self.url, self.queue, self.batch = argv[2], argv[3], int(argv[4])
        self.ready = Path(argv[5])
        self.latency = Path(argv[6]) if len(argv) > 6 else None
        self._log = open(self.latency, "a", buffering=1) if self.latency else None  # noqa: SIM115

    def is_ready(self) -> None:
        self.ready.touch()

    def started(self, seq: Any) -> None:
        """Latency runs: log `seq start-time` for a message whose handler starts now."""
        if self._log is not None:
            self._log.write(f"{seq} {time.time():.6f}\n")


def until(deadline: float) -> bool:
    return time.perf_counter() < deadline
