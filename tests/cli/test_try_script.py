"""`scripts/try`, the short CLI session the demo page links, runs as a newcomer runs it: from an
empty folder, with the virtualenv's `tablequeue` on PATH and no server, on SQLite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_try_script_runs_from_an_empty_folder(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(ROOT / "scripts" / "try")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "TMPDIR": str(tmp_path)},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "send-order-confirmation\tsend_order_confirmation\tcreated" in out, out
    assert "changed\t2\n" in out, out
    assert 'counts\t{"OnHold": 2, "Pending": 2, "Sleeping": 1}' in out, out
    assert (tmp_path / "try.db").exists()  # left for the reader to poke at
