"""`tablequeue publish`: the real command, in its own process, on a SQLite database: queues
applied from YAML with subscriptions, deliveries printed as text and JSON, one `error:` line
for a bad topic or predicate, and what a topic nobody subscribes to does (nothing)."""

from __future__ import annotations

import json
from pathlib import Path

from tablequeue import connect

from . import tsv
from .process import run_cli

QUEUES = """\
apiVersion: tablequeue.dev/v1
kind: Queue
metadata: {name: send-confirmation}
spec:
  subscriptions: [{topic: order-placed}]
---
apiVersion: tablequeue.dev/v1
kind: Queue
metadata: {name: review-big-orders}
spec:
  subscriptions: [{topic: order-placed, where: 'Total > 100'}]
"""


def test_publish_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "queues.yaml").write_text(QUEUES)
    assert run_cli(tmp_path, "queue", "apply", "-f", "queues.yaml").returncode == 0

    small = run_cli(tmp_path, "publish", "order-placed", '{"OrderId": "A-1", "Total": 20}')
    assert small.returncode == 0, small.stderr
    assert tsv.pairs(small.stdout) == {"topic": "order-placed"}
    filtered, inserted = tsv.section(small.stdout, "deliveries")
    assert (filtered["queue"], filtered["outcome"], filtered["id"]) == (
        "review-big-orders",
        "filtered",
        "",
    )
    assert (inserted["queue"], inserted["outcome"], inserted["id"], inserted["status"]) == (
        "send-confirmation",
        "inserted",
        "1",
        "Pending",
    )

    big = run_cli(
        tmp_path, "publish", "order-placed", '{"OrderId": "A-2", "Total": 200}',
        "--id", "A-2", "--header", "source=shop", "--json",
    )  # fmt: skip
    assert big.returncode == 0, big.stderr
    data = json.loads(big.stdout)
    assert data["topic"] == "order-placed"
    assert [(d["queue"], d["outcome"], d["messageId"]) for d in data["deliveries"]] == [
        ("review-big-orders", "inserted", "A-2"),
        ("send-confirmation", "inserted", "A-2"),
    ]

    nobody = run_cli(tmp_path, "publish", "order-shipped", '{"OrderId": "A-1"}')
    assert nobody.returncode == 0
    assert nobody.stdout == "topic\torder-shipped\ndeliveries\t[]\n"
    assert nobody.stderr == "no queue subscribes to 'order-shipped': nothing enqueued\n"

    with connect(f"sqlite:///{tmp_path / 'queues.db'}") as database:
        review = database.queue("review-big-orders").messages()
        assert [(m.message, m.headers) for m in review] == [
            ({"OrderId": "A-2", "Total": 200}, {"source": "shop"})
        ]
        assert database.queue("send-confirmation").count() == 2


def test_mistakes_are_one_error_line(tmp_path: Path) -> None:
    bad_topic = run_cli(tmp_path, "publish", "Order Placed", "{}")
    assert bad_topic.returncode == 1
    assert bad_topic.stderr.startswith("error: invalid topic name 'Order Placed'")
    assert len(bad_topic.stderr.splitlines()) == 1
    (tmp_path / "bad.yaml").write_text(QUEUES.replace("Total > 100", "Total >"))
    bad_where = run_cli(tmp_path, "queue", "apply", "-f", "bad.yaml")
    assert bad_where.returncode == 1
    assert bad_where.stderr.startswith(
        "error: spec.subscriptions[0] (topic 'order-placed'): invalid predicate"
    )


def test_queue_apply_prints_a_spec_warning_and_applies(tmp_path: Path) -> None:
    (tmp_path / "slow.yaml").write_text(
        "apiVersion: tablequeue.dev/v1\nkind: Queue\nmetadata: {name: slow}\n"
        "spec: {workers: {pollInterval: {minSeconds: 0.02, maxSeconds: 5}}}\n"
    )
    applied = run_cli(tmp_path, "queue", "apply", "-f", "slow.yaml", "--json")
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout) == [{"queue": "slow", "table": "slow", "result": "created"}]
    assert applied.stderr.strip() == (
        "warning: queue slow: workers.pollInterval.minSeconds 0.02 is below 0.1 s: "
        "workers would poll the database more often than useful"
    )
