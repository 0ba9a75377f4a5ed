"""`tablequeue schedules QUEUE`: the list, --json, --run, and mistakes as one `error:` line."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tablequeue import connect
from tablequeue.cli import main
from tablequeue.spec import QueueResource

from . import tsv


def test_schedules_lists_and_runs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    with connect(url) as database:
        database.apply(
            QueueResource.from_name(
                "reports",
                schedules=[
                    {"name": "nightly", "cron": "0 2 * * *", "message": {"n": 1}},
                    {"name": "hourly", "cron": "@hourly", "timeZone": "Asia/Tokyo", "message": 2},
                ],
            )
        )
        database.apply(QueueResource.from_name("plain"))
    runner = CliRunner()
    text = runner.invoke(main, ["schedules", "reports", "--db", url])
    assert text.exit_code == 0, text.output
    rows = tsv.rows(text.output)
    assert [(row["name"], row["cron"], row["timeZone"]) for row in rows] == [
        ("nightly", "0 2 * * *", "UTC"),
        ("hourly", "@hourly", "Asia/Tokyo"),
    ]
    assert (rows[0]["lastTick"], rows[0]["fired"]) == ("", "0")

    ran = runner.invoke(main, ["schedules", "reports", "--run", "hourly", "--db", url, "--json"])
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.output)["message"] == 1
    listed = json.loads(runner.invoke(main, ["schedules", "reports", "--db", url, "--json"]).output)
    assert [(s["name"], s["fired"], s["lastMessage"]) for s in listed] == [
        ("nightly", 0, None),
        ("hourly", 1, 1),
    ]
    none = runner.invoke(main, ["schedules", "plain", "--db", url])
    assert (none.stdout, none.stderr) == ("", "queue plain has no schedules\n")

    wrong = runner.invoke(main, ["schedules", "reports", "--run", "weekly", "--db", url])
    assert wrong.exit_code == 1
    assert wrong.output.strip() == "error: queue 'reports' has no schedule 'weekly'"
