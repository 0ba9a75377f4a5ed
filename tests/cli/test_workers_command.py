"""`tablequeue workers [QUEUE]` as a user runs it (a real process), on every engine: the table,
`--json`, one queue's workers, and one `error:` line for a queue that does not exist."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import sqlalchemy as sa

from tablequeue import Database, Queue
from tablequeue.models import Heartbeat

from . import tsv

MakeQueue = Callable[..., Queue]


def run(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tablequeue", "workers", "--db", db_url, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_workers_table_json_and_one_queue(
    db_url: str, database: Database, make_queue: MakeQueue
) -> None:
    make_queue("orders")
    make_queue("mail")
    empty = run(db_url)
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout == "workers\t[]\nlive\t0\nstale\t0\n"
    # Beats every 25 s: live for 75 s, the length of this test on a loaded machine (four CLI
    # processes; with 5 s beats a worker went stale during the run), stale at 90.
    for worker, queue, processed in (("orders-a1", "orders", 1520), ("orders-b2", "orders", 7)):
        database.heartbeat(
            Heartbeat(worker, queue, "pod-" + worker, 77, "0.1.0", 25.0, 3, processed, 2)
        )
    database.heartbeat(Heartbeat("mail-c3", "mail", "pod-mail-c3", 78, "0.1.0", 25.0))
    table = database.workers_table
    with database.transaction() as connection:
        connection.execute(
            sa.update(table)
            .where(table.c.worker_id == "orders-b2")
            .values(last_seen=database.dialect.seconds_from_now(sa.literal(-90.0)))
        )

    shown = run(db_url)
    assert shown.returncode == 0, shown.stderr
    assert tsv.pairs(shown.stdout) == {"live": "2", "stale": "1"}
    rows = tsv.section(shown.stdout, "workers")
    assert list(rows[0]) == list(json.loads(run(db_url, "--json").stdout)["workers"][0])
    assert [(row["queue"], row["workerId"], row["state"]) for row in rows] == [
        ("mail", "mail-c3", "live"),
        ("orders", "orders-a1", "live"),
        ("orders", "orders-b2", "stale"),
    ]
    # Seen 90 s ago, plus the start of the CLI process (up to half a minute on a loaded machine).
    assert 90 <= float(rows[2]["secondsSinceSeen"]) < 120, rows[2]
    assert (rows[1]["inFlight"], rows[1]["processed"], rows[1]["failed"]) == ("3", "1520", "2")

    as_json = run(db_url, "orders", "--json")
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert (data["live"], data["stale"]) == (1, 1)
    assert [(w["workerId"], w["state"], w["pid"]) for w in data["workers"]] == [
        ("orders-a1", "live", 77),
        ("orders-b2", "stale", 77),
    ]
    assert data["workers"][0]["host"] == "pod-orders-a1"


def test_an_unknown_queue_is_one_error_line(db_url: str, make_queue: MakeQueue) -> None:
    make_queue("orders")
    done = run(db_url, "nope")
    assert done.returncode == 1 and done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: queue 'nope' does not exist")
    bad = run(db_url, "Not A Queue")
    assert bad.returncode == 1 and bad.stderr.startswith("error: ")
