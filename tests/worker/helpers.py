"""Running real `tablequeue worker` processes in tests: start, probe, scrape, stop, read logs.

Workers run as subprocesses (`python -m tablequeue worker ...`, cwd = the project, so the
handlers of `tests.support.worker_handlers` import); their JSON logs go to a file per worker,
shown on failure. Handlers record what they do (`tests/support/worker_handlers.py`), so each
test can check exactly which messages ran, where, and how often, next to what the database shows.
The fixtures that start them are in conftest.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tablequeue import NewMessage, Queue
from tablequeue.models import Message
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_records

ROOT = Path(__file__).resolve().parents[2]
SYNC = "python:tests.support.worker_handlers:handle"
ASYNC = "python:tests.support.worker_handlers:handle_async"
BATCH = "python:tests.support.worker_handlers:handle_batch"
BATCH_ASYNC = "python:tests.support.worker_handlers:handle_batch_async"
FAST_POLL = ("--poll-min", "0.05", "--poll-max", "0.5")
MakeQueue = Callable[..., Queue]


def leased_message(
    message_id: int, created_at: datetime | None = None, attempts: int = 1
) -> Message:
    """A message as a lease returns it, for tests of the worker's parts without a database."""
    at = created_at or datetime.now(UTC)
    return Message(
        id=message_id,
        message_id=None,
        status="Leased",
        priority=0,
        message={},
        previous_message=None,
        headers=None,
        version=1,
        attempts=attempts,
        process_after=at,
        expires_at=None,
        lease_expires_at=at,
        lease_owner="me",
        correlation_id=None,
        tracking_id=uuid.uuid4(),
        result=None,
        progress=None,
        last_error=None,
        created_at=at,
        updated_at=at,
        processed_at=None,
        started_at=at,
    )


@dataclass
class WorkerProcess:
    name: str
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    def get(self, path: str) -> tuple[int, str]:
        """GET a probe or /metrics: (status, text), or (0, "") while nothing listens."""
        url = f"http://127.0.0.1:{self.port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return int(response.status), response.read().decode()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode()
        except OSError:
            return 0, ""

    def ready(self) -> bool:
        return self.get("/readyz")[0] == 200

    def wait_ready(self, timeout: float = 30.0) -> None:
        wait_until(lambda: self.ready() or self.process.poll() is not None, timeout)
        assert self.process.poll() is None, f"{self.name} exited: {self.log_tail()}"

    def logs(self) -> list[dict[str, Any]]:
        lines = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
        return lines

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def metrics(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        status, text = self.get("/metrics")
        assert status == 200, text
        return {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    def signal(self, number: int) -> None:
        self.process.send_signal(number)

    def wait_exit(self, timeout: float = 30.0) -> int:
        wait_until(lambda: self.process.poll() is not None, timeout)
        return self.process.returncode


StartWorker = Callable[..., WorkerProcess]


def enqueue(queue: Queue, bodies: list[Any], **options: Any) -> list[int]:
    done = queue.enqueue_many([NewMessage(message=body, **options) for body in bodies])
    ids = [e.id for e in done]
    assert None not in ids
    return [i for i in ids if i is not None]


def all_messages(queue: Queue) -> dict[int, Any]:
    return {m.id: m for m in queue.messages(limit=10_000)}


def events(records: Path, event: str) -> list[int]:
    return [message_id for kind, message_id, _, _ in read_records(records) if kind == event]


def counter(worker: WorkerProcess, name: str, **labels: str) -> float:
    return worker.metrics().get((name, frozenset(labels.items())), 0.0)


def run_failing_worker(*options: str) -> str:
    """Run a worker that must refuse to start; returns its one line on stderr."""
    command = [sys.executable, "-m", "tablequeue", "worker", "orders", *options]
    done = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("TABLEQUEUE_")},
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ")
    return line
