"""`tablequeue audit` and the CLI's own changes in the trail, as separate processes on SQLite:
a change is recorded as the OS user via `cli`; reads record nothing; the listing pages back and
filters by queue."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

from tablequeue import connect
from tablequeue.spec import QueueResource
from tests.cli.process import run_cli


def test_cli_changes_are_the_os_users_and_audit_lists_them(tmp_path: Path) -> None:
    with connect(f"sqlite:///{tmp_path / 'queues.db'}") as database:
        for name in ("orders", "invoices"):
            database.apply(QueueResource.from_name(name))
        database.queue("orders").enqueue({"n": 1})
    # Issue 44 (L4): the user is the process's uid's, not the USER a caller sets.
    claimed = {"USER": "someone-else", "LOGNAME": "someone-else"}
    assert run_cli(tmp_path, "queue", "resume", "orders", env=claimed).returncode == 0
    for args in (
        ("queue", "pause", "orders"),
        ("set-status", "orders", "Error", "--from", "Pending"),
        ("queue", "pause", "invoices"),
        ("messages", "orders"),
        ("audit",),
    ):
        done = run_cli(tmp_path, *args)
        assert done.returncode == 0, done.stderr
    listed = run_cli(tmp_path, "audit", "--json")
    entries = json.loads(listed.stdout)
    assert [(e["action"], e["queue"], e["rows"]) for e in entries] == [
        ("pause", "invoices", None),
        ("set-status", "orders", 1),
        ("pause", "orders", None),
        ("resume", "orders", None),
    ]
    assert {(e["who"], e["via"], e["address"]) for e in entries} == {
        (pwd.getpwuid(os.getuid()).pw_name, "cli", None)
    }
    assert entries[1]["target"] == {"status": "Error", "fromStatus": "Pending"}
    older = run_cli(tmp_path, "audit", "--json", "--queue", "orders", "--limit", "1")
    [newest_of_orders] = json.loads(older.stdout)
    assert newest_of_orders["action"] == "set-status"
    page = run_cli(tmp_path, "audit", "--json", "--before-id", str(entries[1]["id"]))
    assert [e["action"] for e in json.loads(page.stdout)] == ["pause", "resume"]
    unknown = run_cli(tmp_path, "audit", "--queue", "nope")
    assert unknown.returncode == 1 and "nope" in unknown.stderr
