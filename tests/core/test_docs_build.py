"""The test command's check of the documentation site (`scripts/check-docs`) fails on a warning:
a copy of the project whose home page links a page that does not exist is refused, naming the
link (`mkdocs build --strict --quiet` passed such a site: quiet hid the warning from the count)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "check-docs"

pytestmark = pytest.mark.slow


def project_copy(folder: Path) -> Path:
    """The project's top level as links, with a copy of `docs/` to break."""
    for entry in ROOT.iterdir():
        if entry.name not in {"docs", ".git", "build", "site"}:
            (folder / entry.name).symlink_to(entry)
    subprocess.run(["cp", "-r", str(ROOT / "docs"), str(folder / "docs")], check=True)
    return folder


def check_docs(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CHECK), str(folder)], capture_output=True, text=True, timeout=300)


def test_a_broken_link_fails_the_documentation_check(tmp_path: Path) -> None:
    copy = project_copy(tmp_path)
    index = copy / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [the missing page](no-such-page.md).\n")

    checked = check_docs(copy)

    assert checked.returncode == 1, checked.stderr
    assert "'no-such-page.md'" in checked.stderr, checked.stderr
    assert "Aborted with 1 warnings in strict mode" in checked.stderr, checked.stderr
    assert "docs: the strict build of the documentation site failed" in checked.stderr


def test_the_unbroken_copy_passes(tmp_path: Path) -> None:
    """The same copy without the broken link builds: the failure above is the link's."""
    checked = check_docs(project_copy(tmp_path))
    assert checked.returncode == 0, checked.stderr
