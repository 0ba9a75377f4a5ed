"""The machine a benchmark ran on, written beside its figures: CPU, memory, OS, Python, the
throwaway PostgreSQL's version and settings, the tablequeue commit and the load average.
Used by bench.peers and bench.soak (bench.worker has an older one of its own)."""

from __future__ import annotations

import contextlib
import os
import platform
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from bench.worker import ROOT


def machine(pg_url: str, sqlite_url: str | None = None) -> dict[str, Any]:
    """CPU, memory, OS, Python, PostgreSQL version and settings, SQLite (when the benchmark
    uses a SQLite file), tablequeue commit, load average."""
    info = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    mem = next(x for x in Path("/proc/meminfo").read_text().splitlines() if "MemTotal" in x)
    os_name = platform.platform()
    with contextlib.suppress(OSError, IndexError):
        release = Path("/etc/os-release").read_text()
        os_name = release.split('PRETTY_NAME="')[1].split('"')[0] + f", Linux {platform.release()}"
    names = ["fsync", "synchronous_commit", "full_page_writes", "shared_buffers", "work_mem"]
    names += ["max_connections", "autovacuum", "wal_level"]
    with psycopg.connect(pg_url) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        rows = conn.execute(
            "SELECT name, setting, unit FROM pg_settings WHERE name = ANY(%s) ORDER BY name",
            [names],
        ).fetchall()
    git = ["git", "-C", str(ROOT)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--", "tablequeue", "worker"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    about: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": f"{cpu}, {os.cpu_count()} cores",
        "memory": f"{int(mem.split()[1]) / 2**20:.1f} GiB",
        "os": os_name,
        "python": platform.python_version(),
        "postgresql": f"{version[0] if version else '?'}, "
        + ", ".join(f"{n}={v}{u or ''}" for n, v, u in rows)
        + " (throwaway server from tests/support/postgres_server.py, same machine)",
        **(
            {"sqlite": f"{sqlite3.sqlite_version} ({sqlite_url}), tablequeue's own pragmas"}
            if sqlite_url
            else {}
        ),
        "tablequeue": f"commit {commit.stdout.strip()}"
        + (" with uncommitted changes" if dirty else ""),
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    return about
