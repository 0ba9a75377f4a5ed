"""`tablequeue enqueue --correlation-id --label`, `messages --correlation-id` and `show`: the real
commands, in their own processes, on SQLite: both values are stored and shown, the list filters
on the correlation id, an envelope line carries its own, and a malformed one is one `error:`
line naming the field, with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

from tablequeue import connect
from tablequeue.spec import QueueResource

from .process import run_cli


def test_enqueue_list_and_show_with_a_correlation_id_and_label(tmp_path: Path) -> None:
    with connect(f"sqlite:///{tmp_path / 'queues.db'}") as db:
        db.apply(QueueResource.from_name("orders"))
    sent = run_cli(
        tmp_path,
        "enqueue",
        "orders",
        '{"n": 1}',
        "--correlation-id",
        "checkout-5",
        "--label",
        "Order A-5",
        "--json",
    )
    assert sent.returncode == 0, sent.stderr
    (tmp_path / "batch.jsonl").write_text(
        json.dumps({"message": {"n": 2}, "correlationId": "checkout-6", "label": "B-6"}) + "\n"
    )
    batch = run_cli(tmp_path, "enqueue", "orders", "-f", "batch.jsonl", "--envelope")
    assert batch.returncode == 0, batch.stderr

    listed = run_cli(tmp_path, "messages", "orders", "--correlation-id", "checkout-5", "--json")
    assert listed.returncode == 0, listed.stderr
    [only] = json.loads(listed.stdout)
    assert (only["correlationId"], only["label"]) == ("checkout-5", "Order A-5")
    assert "leaseBatchId" in only
    shown = run_cli(tmp_path, "show", "orders", str(only["id"] + 1), "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["label"] == "B-6"
    text = run_cli(tmp_path, "show", "orders", str(only["id"]))
    assert "checkout-5" in text.stdout and "Order A-5" in text.stdout

    bad = run_cli(tmp_path, "enqueue", "orders", '{"n": 3}', "--label", "a\tb")
    assert bad.returncode != 0
    assert bad.stderr.startswith("error: ") and "label" in bad.stderr
    assert "control characters" in bad.stderr
    with connect(f"sqlite:///{tmp_path / 'queues.db'}") as db:
        assert len(db.queue("orders").messages()) == 2
