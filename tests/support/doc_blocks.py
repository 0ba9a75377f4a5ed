"""The fenced code blocks of a Markdown page of this repository, with the
`<!-- snippet: ... -->` marker right before each (tests/core/test_docs_snippets.py checks them;
tests/deploy/pods.py runs README's Helm block as written)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
_MARKER = re.compile(r"<!-- snippet: (.+?) -->\n$")


@dataclass(frozen=True)
class Block:
    page: str  # path relative to the repository
    line: int
    language: str
    code: str
    marker: str  # the `<!-- snippet: ... -->` line right before the fence, or ""

    def __str__(self) -> str:
        return f"{self.page}:{self.line} ```{self.language}"


def blocks(page: str) -> list[Block]:
    text = (ROOT / page).read_text()
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()]
        marker = _MARKER.search(before[-200:]) if before.endswith("-->\n") else None
        found.append(
            Block(
                page=page,
                line=before.count("\n") + 1,
                language=match.group(1),
                code=match.group(2),
                marker=marker.group(1) if marker else "",
            )
        )
    return found
