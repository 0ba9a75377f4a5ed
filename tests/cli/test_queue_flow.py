"""`tablequeue queue pause|resume` and what `queue list` shows of pauses and rate limits."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from click.testing import CliRunner

from tablequeue import Database, Queue
from tablequeue.cli import main

from . import tsv


def run(db_url: str, *args: str) -> Any:
    result = CliRunner().invoke(main, list(args), env={"TABLEQUEUE_DB": db_url})
    return result


def test_pause_resume_and_list(
    db_url: str, database: Database, make_queue: Callable[..., Queue]
) -> None:
    queue = make_queue("orders")
    make_queue("mail", rate_limit={"messagesPerSecond": 0.5, "burst": 2}, global_concurrency=3)
    queue.enqueue({"n": 1})

    paused = run(db_url, "queue", "pause", "orders")
    assert paused.exit_code == 0, paused.output
    shown = tsv.pairs(paused.output)
    assert (shown["queue"], shown["paused"]) == ("orders", "true") and shown["pausedAt"]
    assert database.flow_state("orders").paused
    assert queue.lease("w1", 10).messages == []

    listed = run(db_url, "queue", "list", "--json")
    rows = {row["name"]: row for row in json.loads(listed.output)}
    assert rows["orders"]["paused"] is True and rows["orders"]["pausedAt"]
    assert rows["mail"]["paused"] is False
    assert rows["mail"]["rateLimit"] == {"messagesPerSecond": 0.5, "burst": 2}
    assert (rows["mail"]["globalConcurrency"], rows["orders"]["globalConcurrency"]) == (3, None)
    text = {row["name"]: row for row in tsv.rows(run(db_url, "queue", "list").output)}
    assert text["orders"]["paused"] == "true"
    assert text["mail"]["rateLimit"] == '{"messagesPerSecond": 0.5, "burst": 2}'

    resumed = run(db_url, "queue", "resume", "orders", "--json")
    assert json.loads(resumed.output)["paused"] is False
    assert len(queue.lease("w1", 10).messages) == 1


def test_pausing_a_queue_that_does_not_exist_is_one_error_line(
    db_url: str, database: Database
) -> None:
    for args in (("queue", "pause", "nope"), ("queue", "resume", "Bad;Name")):
        result = run(db_url, *args)
        assert result.exit_code == 1
        [line] = result.output.splitlines()
        assert line.startswith("error: ")
