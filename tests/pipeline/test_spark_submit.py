"""Jobs run as docs/guides/pipeline.md shows, each in a process of its own: `spark-submit
pipeline/__main__.py ...` (pip's pyspark puts spark-submit next to the virtualenv's Python) and
the `tablequeue` console script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tablequeue.pipeline
from tablequeue import connect
from tablequeue.spec import QueueResource

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_spark_submit_runs_an_enqueue(sqlite_url: str, tmp_path: Path) -> None:
    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("mail"))
    source = tmp_path / "mail.jsonl"
    source.write_text(
        '{"id": "S-1", "to": "a@example.com"}\n{"id": "S-2", "to": "b@example.com"}\n'
    )
    bin_dir = Path(sys.executable).parent
    script = Path(tablequeue.pipeline.__file__).parent / "__main__.py"
    submitted = subprocess.run(
        [
            str(bin_dir / "spark-submit"),
            "--master",
            "local[2]",
            "--conf",
            "spark.ui.enabled=false",
            str(script),
            "enqueue",
            "mail",
            str(source),
            "--id-column",
            "id",
            "--db",
            sqlite_url,
        ],
        env={
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1",
        },
        cwd="/",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert submitted.returncode == 0, submitted.stderr[-6000:]
    # spark-submit runs the Python driver with its stderr merged into stdout (PythonRunner):
    # the progress lines come there, the totals line before the result.
    out = submitted.stdout.splitlines()
    assert out[-3].startswith("enqueue mail: finished, inserted 2, updated 0, "), out
    assert out[-2].startswith("mail: inserted 2, updated 0, unchanged 0, rejected 0 in "), out
    assert out[-1] == "note: mail is not idempotent: a re-run updates every message with an id"
    with connect(sqlite_url) as database:
        messages = {m.message_id: m.message for m in database.queue("mail").messages(limit=10)}
    assert messages == {
        "S-1": {"id": "S-1", "to": "a@example.com"},
        "S-2": {"id": "S-2", "to": "b@example.com"},
    }


def test_a_missing_input_is_one_error_line(sqlite_url: str, tmp_path: Path) -> None:
    """The console script, in a process of its own, given a path that does not exist: one
    line naming it, exit status 1, no traceback."""
    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("mail"))
    missing = tmp_path / "no-such-folder" / "mail.csv"
    run = subprocess.run(
        [
            *(str(Path(sys.executable).parent / "tablequeue"), "pipeline", "enqueue", "mail"),
            *(str(missing), "--db", sqlite_url, "--master", "local[1]"),
            *("--conf", "spark.ui.enabled=false"),
        ],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1, run.stderr[-6000:]
    assert "Traceback" not in run.stderr, run.stderr[-6000:]
    lines = run.stderr.splitlines()
    assert lines[-1] == f"error: input not found: {missing}", run.stderr[-6000:]
    assert [line for line in lines if line.startswith("error")] == lines[-1:]
    assert run.stdout == ""
