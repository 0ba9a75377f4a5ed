"""The distribution ships every package: `pyproject.toml` lists them one by one (the folders map
into the `tablequeue` namespace), and an editable install would hide a missing one that the
images, built from a real wheel, then lack."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_folder_is_listed_in_pyproject() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {Path(folder): package for package, folder in setuptools["package-dir"].items()}
    found = set()
    for folder, package in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            inner = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((package, *inner)))
    assert found == set(setuptools["packages"])
