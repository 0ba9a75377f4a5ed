"""`tablequeue enqueue --group-key` and `show`: the real commands, in their own processes, on
SQLite: the key is stored and shown, an envelope line carries its own, the spec's keyPath gives
one to a body that has it, and a malformed key is refused naming the field, with nothing
written."""

from __future__ import annotations

import json
from pathlib import Path

from tablequeue import connect
from tablequeue.spec import QueueResource

from .process import run_cli


def test_enqueue_and_show_with_a_group_key(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'queues.db'}"
    with connect(url) as db:
        db.apply(QueueResource.from_name("orders", groups={"keyPath": "CustomerId"}))
    sent = run_cli(tmp_path, "enqueue", "orders", '{"n": 1}', "--group-key", "customer-5")
    assert sent.returncode == 0, sent.stderr
    (tmp_path / "batch.jsonl").write_text(
        json.dumps({"message": {"n": 2}, "groupKey": "customer-6"})
        + "\n"
        + json.dumps({"message": {"n": 3, "CustomerId": 7}})
        + "\n"
    )
    batch = run_cli(tmp_path, "enqueue", "orders", "-f", "batch.jsonl", "--envelope")
    assert batch.returncode == 0, batch.stderr
    with connect(url) as db:
        ids = {m.message["n"]: m.id for m in db.queue("orders").messages()}
    keys = {}
    for n, message_id in ids.items():
        shown = run_cli(tmp_path, "show", "orders", str(message_id), "--json")
        assert shown.returncode == 0, shown.stderr
        keys[n] = json.loads(shown.stdout)["groupKey"]
    assert keys == {1: "customer-5", 2: "customer-6", 3: "7"}
    text = run_cli(tmp_path, "show", "orders", str(ids[1]))
    assert "customer-5" in text.stdout

    bad = run_cli(tmp_path, "enqueue", "orders", '{"n": 4}', "--group-key", "a\tb")
    assert bad.returncode != 0 and "group_key" in bad.stdout + bad.stderr
    with connect(url) as db:
        assert db.queue("orders").count() == 3
