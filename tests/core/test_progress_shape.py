"""The documented progress shape (tablequeue.progress): which values draw a bar, and how."""

from __future__ import annotations

from typing import Any

import pytest

from tablequeue.progress import Progress, ProgressBar, progress_bar


@pytest.mark.parametrize(
    ("progress", "bar"),
    [
        (Progress(step=3, steps=10, text="copying"), ProgressBar(30.0, "3 of 10 · 30% · copying")),
        ({"percent": 42.4}, ProgressBar(42.4, "42%")),
        ({"percent": 140}, ProgressBar(100.0, "100%")),
        ({"step": 12, "steps": 10}, ProgressBar(100.0, "12 of 10 · 100%")),
        (
            {"complete": True, "step": 2, "steps": 10},
            ProgressBar(100.0, "2 of 10 · 100% · complete"),
        ),
        ({"text": "waiting for the export"}, ProgressBar(None, "waiting for the export")),
        ({"percent": 5, "extra": [1, 2]}, ProgressBar(5.0, "5%")),  # other keys are free
    ],
)
def test_values_of_the_shape_draw_a_bar(progress: Any, bar: ProgressBar) -> None:
    assert progress_bar(progress) == bar


@pytest.mark.parametrize(
    "progress",
    [
        None,
        42,
        "half way",
        [1, 2],
        {"rows": 5},
        {"percent": "40"},  # a key of the shape with another type: free JSON
        {"step": True, "steps": 2},
        {"step": 1, "steps": 0},
        {"step": -1, "steps": 3},
        {"complete": "yes"},
    ],
)
def test_other_values_are_free_json(progress: Any) -> None:
    assert progress_bar(progress) is None


def test_the_text_bar_is_twenty_cells() -> None:
    assert ProgressBar(30.0, "30%").text_bar() == "██████" + "░" * 14 + " 30%"
    assert ProgressBar(None, "waiting").text_bar() == "waiting"
