"""`tablequeue enqueue --dedupe --dedupe-window`: the real command, in its own process, on
SQLite: the call's mode wins over the queue's, `kept` is reported with the row left as it was,
and a window mode without a window is one `error:` line naming the option, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

from tablequeue import connect
from tablequeue.spec import QueueResource

from .process import run_cli


def test_enqueue_with_a_dedupe_mode(tmp_path: Path) -> None:
    with connect(f"sqlite:///{tmp_path / 'queues.db'}") as db:
        db.apply(QueueResource.from_name("orders"))
    first = run_cli(tmp_path, "enqueue", "orders", '{"v": 1}', "--id", "a", "--json")
    assert first.returncode == 0, first.stderr
    inserted = json.loads(first.stdout)
    kept = run_cli(
        tmp_path, "enqueue", "orders", '{"v": 2}', "--id", "a", "--dedupe", "keep", "--json"
    )
    assert kept.returncode == 0, kept.stderr
    assert json.loads(kept.stdout) == inserted | {"outcome": "kept"}
    windowed = run_cli(
        tmp_path,
        "enqueue",
        "orders",
        '{"v": 3}',
        "--id",
        "a",
        "--dedupe",
        "window",
        "--dedupe-window",
        "1h",
    )
    assert windowed.returncode == 0, windowed.stderr
    assert "kept" in windowed.stdout

    refused = run_cli(tmp_path, "enqueue", "orders", '{"v": 4}', "--id", "b", "--dedupe", "window")
    assert refused.returncode != 0
    assert refused.stderr.startswith("error: ") and "--dedupe-window" in refused.stderr
    replaced = run_cli(tmp_path, "enqueue", "orders", '{"v": 5}', "--id", "a", "--json")
    assert json.loads(replaced.stdout)["outcome"] == "updated"
    with connect(f"sqlite:///{tmp_path / 'queues.db'}") as db:
        [message] = db.queue("orders").messages()
        assert message.message == {"v": 5}
