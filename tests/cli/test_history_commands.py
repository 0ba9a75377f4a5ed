"""`tablequeue show` prints a message's attempt history; `tablequeue job` finds a message by
its tracking id, in its queue or, once the row is gone, in the kept results."""

from __future__ import annotations

import json
import traceback
from typing import Any

from click.testing import CliRunner, Result

from tablequeue import Completion, Database, Failure, Queue
from tablequeue.cli import main
from tablequeue.progress import Progress
from tablequeue.spec import QueueResource

from . import tsv


def _run(db_url: str, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"TABLEQUEUE_DB": db_url})


def _queue(database: Database, **spec: Any) -> Queue:
    database.apply(QueueResource.from_name("orders", **spec))
    return database.queue("orders")


def test_show_prints_the_attempts(database: Database, db_url: str) -> None:
    queue = _queue(database, max_attempts=3, retry={"delay_seconds": 0})
    queue.enqueue({"n": 1})
    [m] = queue.lease("worker-a", 1, correlation_id="cid-1").messages
    queue.fail("worker-a", [Failure(m, "SMTP timeout\nTraceback ...")])
    [again] = queue.lease("worker-b", 1).messages
    queue.fail("worker-b", [Failure(again, _traceback_of(ValueError("bad sku 123")))])

    shown = _run(db_url, "show", "orders", str(m.id))
    assert shown.exit_code == 0, shown.output
    assert tsv.pairs(shown.output)["attempts"] == "2"
    first, second = tsv.section(shown.output, "attemptHistory")
    assert (first["attempt"], first["kind"], first["owner"], first["leaseBatchId"]) == (
        "1",
        "failure",
        "worker-a",
        "cid-1",
    )
    assert first["exception"] == "SMTP timeout"
    assert first["error"] == "SMTP timeout\nTraceback ..."  # one line: escaped
    assert second["exception"] == "ValueError: bad sku 123"  # not "Traceback (most recent ..."

    as_json = _run(db_url, "show", "orders", str(m.id), "--json")
    attempt, _ = json.loads(as_json.output)["attemptHistory"]
    assert attempt["owner"] == "worker-a" and attempt["leaseBatchId"] == "cid-1"
    assert attempt["error"] == "SMTP timeout\nTraceback ..." and attempt["kind"] == "failure"
    assert attempt["exception"] == "SMTP timeout"


def _traceback_of(error: Exception) -> str:
    try:
        raise error
    except Exception as raised:
        return "".join(traceback.format_exception(raised))


def test_show_says_when_nothing_failed(database: Database, db_url: str) -> None:
    queue = _queue(database)
    done = queue.enqueue({"n": 1})
    shown = _run(db_url, "show", "orders", str(done.id))
    assert shown.exit_code == 0
    assert tsv.pairs(shown.output)["attemptHistory"] == "[]" and "\n# " not in shown.output


def test_job_answers_from_the_queue_then_from_the_results(database: Database, db_url: str) -> None:
    queue = _queue(database)
    done = queue.enqueue({"n": 1})
    pending = json.loads(_run(db_url, "job", str(done.tracking_id), "--json").output)
    assert pending["source"] == "queue" and pending["status"] == "Pending"
    [m] = queue.lease("w1", 1).messages
    queue.complete("w1", [Completion(m, result={"sent": True})])

    finished = _run(db_url, "job", str(done.tracking_id))
    assert finished.exit_code == 0, finished.output
    shown = tsv.pairs(finished.output)
    assert (shown["source"], shown["status"], shown["result"]) == (
        "results",
        "Processed",
        '{"sent": true}',
    )
    found = json.loads(_run(db_url, "job", str(done.tracking_id), "--json").output)
    assert found["result"] == {"sent": True} and found["queue"] == "orders"


def test_job_draws_progress_of_the_documented_shape(database: Database, db_url: str) -> None:
    queue = _queue(database)
    working, free = queue.enqueue({"n": 1}), queue.enqueue({"n": 2})
    assert working.id is not None and free.id is not None
    queue.report_progress(working.id, Progress(step=3, steps=10, text="copying files"))
    queue.report_progress(free.id, {"rows": 5})
    shown = tsv.pairs(_run(db_url, "job", str(working.tracking_id)).output)
    assert shown["progressBar"] == "██████" + "░" * 14 + " 3 of 10 · 30% · copying files"
    assert json.loads(shown["progress"]) == {"step": 3, "steps": 10, "text": "copying files"}
    assert "progressBar" not in tsv.pairs(_run(db_url, "job", str(free.tracking_id)).output)


def test_job_with_a_bad_or_unknown_tracking_id_is_one_error_line(
    database: Database, db_url: str
) -> None:
    _queue(database)
    bad = _run(db_url, "job", "not-a-uuid")
    assert bad.exit_code == 1 and bad.output.startswith("error: invalid tracking id")
    unknown = _run(db_url, "job", "00000000-0000-0000-0000-000000000001")
    assert unknown.exit_code == 1 and "no kept result" in unknown.output
    assert len(unknown.output.strip().splitlines()) == 1
