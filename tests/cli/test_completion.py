"""Shell completion as docs/reference/cli.md documents it: click's scripts for bash, zsh and fish,
the subcommands completed in a real bash, and queue names read from TABLEQUEUE_DB."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tablequeue import connect
from tablequeue.spec import QueueResource

CONSOLE_SCRIPT = Path(sys.executable).with_name("tablequeue")


def tablequeue(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), *args],
        env=os.environ | env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


@pytest.mark.parametrize(
    ("shell", "registers"),
    [
        ("bash", "complete -o nosort -F _tablequeue_completion tablequeue"),
        ("zsh", "compdef _tablequeue_completion tablequeue"),
        ("fish", "complete --no-files --command tablequeue"),
    ],
)
def test_the_completion_script_of_each_shell(shell: str, registers: str) -> None:
    script = tablequeue({"_TABLEQUEUE_COMPLETE": f"{shell}_source"})
    assert registers in script


def test_a_completion_request_returns_the_subcommands() -> None:
    env = {"_TABLEQUEUE_COMPLETE": "bash_complete", "COMP_WORDS": "tablequeue s", "COMP_CWORD": "1"}
    assert tablequeue(env).splitlines() == [
        "plain,schedules",
        "plain,set-status",
        "plain,show",
        "plain,stats",
        "plain,sweep",
    ]


def test_bash_completes_subcommands_and_queue_names_with_the_sourced_script(
    sqlite_url: str,
) -> None:
    """The documented line (`eval "$(_TABLEQUEUE_COMPLETE=bash_source tablequeue)"`) in a real
    bash, then its completion function asked as bash asks it on Tab."""
    with connect(sqlite_url) as database:
        for name in ("orders", "order-lines", "mails"):
            database.apply(QueueResource.from_name(name))
    program = """
        eval "$(_TABLEQUEUE_COMPLETE=bash_source tablequeue)"
        complete() {
            COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
            _tablequeue_completion tablequeue
            printf '%s\\n' "${COMPREPLY[@]}" | sort | paste -sd' '
        }
        complete tablequeue qu
        complete tablequeue stats ord
        complete tablequeue queue pause ''
    """
    env = os.environ | {
        "PATH": f"{CONSOLE_SCRIPT.parent}{os.pathsep}{os.environ['PATH']}",
        "TABLEQUEUE_DB": sqlite_url,
    }
    done = subprocess.run(
        ["bash", "-c", program], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines() == ["queue", "order-lines orders", "mails order-lines orders"]


def test_queue_names_complete_nothing_without_a_reachable_database(tmp_path: Path) -> None:
    env = {
        "_TABLEQUEUE_COMPLETE": "bash_complete",
        "COMP_WORDS": "tablequeue stats ",
        "COMP_CWORD": "2",
        "TABLEQUEUE_DB": f"sqlite:///{tmp_path}/missing/nowhere.db",
    }
    assert tablequeue(env).strip() == ""
