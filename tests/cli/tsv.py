"""Reading the CLI's output when stdout is not a terminal (cli/output.py): tab-separated values,
a header line of the `--json` keys, or `key<TAB>value` lines for one object, and `# key`
sections for the lists of objects inside it."""

from __future__ import annotations

import re

ESCAPES = {"\\\\": "\\", "\\t": "\t", "\\n": "\n", "\\r": "\r"}


def unescape(text: str) -> str:
    return re.sub(r"\\[\\tnr]", lambda m: ESCAPES[m.group(0)], text)


def rows(output: str) -> list[dict[str, str]]:
    """A list of objects: the header's keys, each row's cells."""
    header, *lines = output.rstrip("\n").split("\n")
    keys = header.split("\t")
    return [dict(zip(keys, map(unescape, line.split("\t")), strict=True)) for line in lines]


def pairs(output: str) -> dict[str, str]:
    """One object's `key<TAB>value` lines (before any `# key` section)."""
    head = output.split("\n\n# ")[0]
    return {key: unescape(value) for key, value in (line.split("\t") for line in head.splitlines())}


def section(output: str, key: str) -> list[dict[str, str]]:
    """The table of an object's list `key`."""
    return rows(output.split(f"\n\n# {key}\n", 1)[1].split("\n\n# ")[0])
