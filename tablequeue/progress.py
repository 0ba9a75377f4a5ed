"""The documented shape of a message's progress, beside free JSON.

A handler may report any JSON as progress. An object with the keys of `Progress` (all optional:
`step` of `steps`, a line of `text`, a `percent`, `complete`) is also shown as a bar, by the
admin UI and `tablequeue job`; an object whose keys have other types stays free JSON, shown as
it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypedDict

BAR_WIDTH = 20


class Progress(TypedDict, total=False):
    """`report_progress(Progress(step=3, steps=10, text="copying files"))`: a plain dict."""

    step: int
    """Steps done, 0 to `steps`."""
    steps: int
    """Steps in all (at least 1)."""
    text: str
    """What it is doing now, one short line."""
    percent: float
    """0 to 100; without it, `step` of `steps`."""
    complete: bool
    """The work is done (100 %)."""


_TYPES: dict[str, type | tuple[type, ...]] = {
    "step": int,
    "steps": int,
    "text": str,
    "percent": (int, float),
    "complete": bool,
}


@dataclass(frozen=True)
class ProgressBar:
    percent: float | None
    """0 to 100; None when the progress says neither a percentage nor a step of steps."""
    label: str
    """E.g. `3 of 10 · 30% · copying files`."""

    def text_bar(self) -> str:
        """The bar in text, for a terminal: `██████░░░░░░░░░░░░░░ 30% · 3 of 10 · copying`."""
        if self.percent is None:
            return self.label
        filled = round(self.percent / 100 * BAR_WIDTH)
        return "█" * filled + "░" * (BAR_WIDTH - filled) + " " + self.label


def progress_bar(progress: Any) -> ProgressBar | None:
    """The bar a progress value shows, or None when it is free JSON (not of Progress's shape)."""
    if not isinstance(progress, dict) or not progress.keys() & _TYPES.keys():
        return None
    for key, kind in _TYPES.items():
        value = progress.get(key)
        if value is not None and (not isinstance(value, kind) or _not_a_count(key, value)):
            return None
    percent = _percent(progress)
    parts = []
    if progress.get("step") is not None and progress.get("steps"):
        parts.append(f"{progress['step']} of {progress['steps']}")
    if percent is not None:
        parts.append(f"{percent:.0f}%")
    if progress.get("text"):
        parts.append(str(progress["text"]))
    elif progress.get("complete"):
        parts.append("complete")
    return ProgressBar(percent, " · ".join(parts))


def _not_a_count(key: str, value: Any) -> bool:
    """bool is an int in Python, not a count; NaN and infinities are not percentages."""
    if key in ("step", "steps", "percent") and isinstance(value, bool):
        return True
    if key == "percent":
        return not math.isfinite(value)
    return (key == "steps" and value < 1) or (key == "step" and value < 0)


def _percent(progress: dict[str, Any]) -> float | None:
    if progress.get("complete"):
        return 100.0
    if progress.get("percent") is not None:
        return min(100.0, max(0.0, float(progress["percent"])))
    step, steps = progress.get("step"), progress.get("steps")
    if step is not None and steps:
        return min(100.0, 100.0 * int(step) / int(steps))
    return None
