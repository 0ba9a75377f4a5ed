"""`tablequeue schedules QUEUE`: the list, --json, --run, and mistakes as one `error:` line."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tablequeue import connect
from tablequeue.cli import main
from tablequeue.spec import QueueResource


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
    header, *rows = text.output.splitlines()
    assert header.split()[:3] == ["NAME", "CRON", "TIME"]
    assert [row.split()[0] for row in rows] == ["nightly", "hourly"]
    assert "Asia/Tokyo" in rows[1] and rows[0].split()[-2:] == ["never", "0"]

    ran = runner.invoke(main, ["schedules", "reports", "--run", "hourly", "--db", url, "--json"])
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.output)["message"] == 1
    listed = json.loads(runner.invoke(main, ["schedules", "reports", "--db", url, "--json"]).output)
    assert [(s["name"], s["fired"], s["lastMessage"]) for s in listed] == [
        ("nightly", 0, None),
        ("hourly", 1, 1),
    ]
    none = runner.invoke(main, ["schedules", "plain", "--db", url])
    assert none.output.strip() == "queue plain has no schedules"

    wrong = runner.invoke(main, ["schedules", "reports", "--run", "weekly", "--db", url])
    assert wrong.exit_code == 1
    assert wrong.output.strip() == "error: queue 'reports' has no schedule 'weekly'"
