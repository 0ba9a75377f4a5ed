"""The exception line of a recorded error, the line the UI and the CLI show first."""

from __future__ import annotations

import traceback

import pytest

from tablequeue.error_text import exception_line


def _raised(make: type[Exception] | None = None) -> str:
    """The traceback Python prints for a ValueError raised two calls down (multi-line text),
    wrapped by `make` when given (a chain)."""

    def inner() -> None:
        raise ValueError("bad sku 123\nsecond line of the message")

    try:
        try:
            inner()
        except ValueError as error:
            if make is None:
                raise
            raise make("could not price the order") from error
    except Exception as error:
        return "".join(traceback.format_exception(error))
    raise AssertionError("unreachable")


def _group() -> str:
    try:
        raise ExceptionGroup("two calls failed", [KeyError("sku"), ValueError("qty")])
    except ExceptionGroup as error:
        return "".join(traceback.format_exception(error))


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (_raised(), "ValueError: bad sku 123"),
        (_raised(RuntimeError), "RuntimeError: could not price the order"),
        (_group(), "ExceptionGroup: two calls failed (2 sub-exceptions)"),
        ("HTTP 500: the app's database is down\n<html>...", "HTTP 500: the app's database is down"),
        ("\n  PermanentFailure: no such customer  \n", "PermanentFailure: no such customer"),
        (
            'Traceback (most recent call last):\n  File "x.py", line 1\n',
            "Traceback (most recent call last):",
        ),
        ("", ""),
        (None, ""),
    ],
)
def test_exception_line(error: str | None, line: str) -> None:
    assert exception_line(error) == line
