"""`tablequeue enqueue --tracking-id`: the real command, in its own process, on SQLite: the
sender's UUID becomes the message's; a taken one and a malformed one are one `error:` line
naming it, and nothing is written; JSON Lines envelopes carry `trackingId` per message."""

from __future__ import annotations

import json
from pathlib import Path

from tablequeue import connect
from tablequeue.spec import QueueResource

from .process import run_cli

CHOSEN = "3f2c1d0e-9b8a-4c7d-8e6f-5a4b3c2d1e0f"


def test_enqueue_with_the_sender_s_tracking_id(tmp_path: Path) -> None:
    with connect(f"sqlite:///{tmp_path / 'queues.db'}") as db:
        db.apply(QueueResource.from_name("orders"))
    sent = run_cli(tmp_path, "enqueue", "orders", '{"n": 1}', "--tracking-id", CHOSEN, "--json")
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["trackingId"] == CHOSEN

    taken = run_cli(tmp_path, "enqueue", "orders", '{"n": 2}', "--tracking-id", CHOSEN)
    assert taken.returncode != 0
    assert taken.stderr.startswith(f"error: trackingId {CHOSEN} is taken: message 1 of queue")
    malformed = run_cli(tmp_path, "enqueue", "orders", '{"n": 3}', "--tracking-id", "12345")
    assert malformed.returncode != 0
    assert "tracking_id: Input should be a valid UUID" in malformed.stderr

    other = "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a"
    (tmp_path / "batch.jsonl").write_text(
        json.dumps({"message": {"n": 4}, "trackingId": other}) + "\n"
    )
    batch = run_cli(tmp_path, "enqueue", "orders", "-f", "batch.jsonl", "--envelope", "--json")
    assert batch.returncode == 0, batch.stderr
    assert json.loads(batch.stdout)["trackingId"] == other
    with connect(f"sqlite:///{tmp_path / 'queues.db'}") as db:
        stored = {str(m.tracking_id): m.message for m in db.queue("orders").messages()}
    assert stored == {CHOSEN: {"n": 1}, other: {"n": 4}}
