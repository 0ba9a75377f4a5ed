"""`tablequeue messages QUEUE --error-contains --created-after ...`: the real command, in its own
process, on SQLite: the filters choose the messages, and a bad time is one `error:` line naming
the option."""

from __future__ import annotations

import json
from pathlib import Path

from tablequeue import Failure, connect
from tablequeue.spec import QueueResource

from .process import run_cli


def test_messages_by_error_text_and_time(tmp_path: Path) -> None:
    with connect(f"sqlite:///{tmp_path / 'queues.db'}") as db:
        db.apply(QueueResource.from_name("orders"))
        queue = db.queue("orders")
        made = [queue.enqueue({"n": n}).id for n in range(2)]
        [first, _] = queue.lease("w1", 2).messages
        queue.fail("w1", [Failure(first, "TimeoutError: upstream 100% busy", permanent=True)])

    def listed(*options: str) -> list[int]:
        done = run_cli(tmp_path, "messages", "orders", *options, "--json")
        assert done.returncode == 0, done.stderr
        return [m["id"] for m in json.loads(done.stdout)]

    assert listed("--error-contains", "100% BUSY") == made[:1]
    assert listed("--error-contains", "%") == made[:1]
    assert listed("--created-after", "-1h", "--updated-before", "2999-01-01T00:00Z") == made
    assert listed("--created-before", "-1h") == []
    assert listed("--error-contains", "timeout", "--status", "Pending") == []

    bad = run_cli(tmp_path, "messages", "orders", "--updated-after", "2026-01-31 12:00")
    assert bad.returncode != 0
    assert bad.stderr.startswith("error: --updated-after: ") and "needs an offset" in bad.stderr
