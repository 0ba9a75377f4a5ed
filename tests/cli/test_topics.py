"""`tablequeue topics`: the real command, in its own process, on a SQLite database: a runtime
subscription made, listed beside the spec's with origin and expiry (text and JSON), the
refusals as one `error:` line, and unsubscribing."""

from __future__ import annotations

import json
from pathlib import Path

from tablequeue import connect

from . import tsv
from .process import run_cli

QUEUES = """\
apiVersion: tablequeue.dev/v1
kind: Queue
metadata: {name: mail}
spec:
  subscriptions: [{topic: order-placed}]
  runtimeSubscriptions: {allowed: true, maxExpiry: 7d}
---
apiVersion: tablequeue.dev/v1
kind: Queue
metadata: {name: closed}
"""


def test_subscribe_list_and_unsubscribe_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "queues.yaml").write_text(QUEUES)
    assert run_cli(tmp_path, "queue", "apply", "-f", "queues.yaml").returncode == 0

    made = run_cli(
        tmp_path, "topics", "subscribe", "order-shipped", "mail",
        "--where", "Total > 100", "--expires-after", "2h",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    shown = tsv.pairs(made.stdout)
    assert (shown["topic"], shown["queue"], shown["where"], shown["origin"]) == (
        "order-shipped",
        "mail",
        "Total > 100",
        "runtime",
    )
    assert shown["expiresAt"]

    listed = run_cli(tmp_path, "topics", "list")
    assert listed.returncode == 0, listed.stderr
    assert [(r["topic"], r["origin"], r["expiresAt"] == "") for r in tsv.rows(listed.stdout)] == [
        ("order-placed", "spec", True),
        ("order-shipped", "runtime", False),
    ]
    as_json = json.loads(run_cli(tmp_path, "topics", "list", "order-shipped", "--json").stdout)
    assert [(s["queue"], s["expiresAt"]) for s in as_json] == [("mail", shown["expiresAt"])]

    refused = run_cli(tmp_path, "topics", "subscribe", "order-shipped", "closed")
    assert refused.returncode == 1
    assert refused.stderr == (
        "error: queue 'closed' does not allow runtime subscriptions: its Queue spec needs "
        "runtimeSubscriptions.allowed: true\n"
    )
    spec_topic = run_cli(tmp_path, "topics", "subscribe", "order-placed", "mail")
    assert spec_topic.returncode == 1
    assert "one subscription per topic and queue" in spec_topic.stderr
    too_long = run_cli(tmp_path, "topics", "subscribe", "t", "mail", "--expires-after", "8d")
    assert too_long.returncode == 1 and "maxExpiry (7d)" in too_long.stderr
    past = run_cli(
        tmp_path, "topics", "subscribe", "t", "mail", "--expires-at", "2000-01-01T00:00Z"
    )
    assert past.returncode == 1 and "is already past" in past.stderr

    gone = run_cli(tmp_path, "topics", "unsubscribe", "order-shipped", "mail", "--json")
    assert gone.returncode == 0, gone.stderr
    assert json.loads(gone.stdout) == {
        "topic": "order-shipped",
        "queue": "mail",
        "unsubscribed": True,
    }
    again = run_cli(tmp_path, "topics", "unsubscribe", "order-shipped", "mail")
    assert again.returncode == 1
    assert (
        again.stderr == "error: queue 'mail' has no runtime subscription to topic 'order-shipped'\n"
    )
    with connect(f"sqlite:///{tmp_path / 'queues.db'}") as database:
        assert [s.topic for s in database.list_subscriptions()] == ["order-placed"]
    none = run_cli(tmp_path, "topics", "list", "order-shipped")
    assert none.returncode == 0 and none.stdout == "" and none.stderr == "no subscriptions\n"
