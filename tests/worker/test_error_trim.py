"""An error text too long to store whole keeps its start and its end: a deep traceback keeps
the exception line the UI and the CLI show first."""

from __future__ import annotations

from tablequeue.error_text import exception_line
from tablequeue.worker.handlers import MAX_ERROR_TEXT, _trim


def _deep_traceback(frames: int) -> str:
    lines = ["Traceback (most recent call last):"]
    for n in range(frames):
        lines += [f'  File "/app/shop/orders.py", line {n}, in step_{n}', f"    step_{n + 1}()"]
    return "\n".join([*lines, "ValueError: bad sku 123", ""])


def test_a_long_traceback_keeps_its_exception_line() -> None:
    trace = _deep_traceback(200)
    assert len(trace) > MAX_ERROR_TEXT
    trimmed = _trim(trace)
    assert len(trimmed) <= MAX_ERROR_TEXT
    assert trimmed.startswith("Traceback (most recent call last):\n")
    assert "\n  [...]\n" in trimmed
    assert exception_line(trimmed) == "ValueError: bad sku 123"


def test_a_short_text_is_kept_whole() -> None:
    assert _trim("HTTP 500: down") == "HTTP 500: down"
