"""Reading a recorded error (a message's `lastError`, an attempt's `error`): its exception line,
the one line a person looks for first. The UI and the CLI show errors through this."""

from __future__ import annotations

TRACEBACK = "Traceback (most recent call last):"
GROUP_TRACEBACK = "+ Exception Group Traceback (most recent call last):"
GROUP_LINE = "  | "
"""How Python prefixes each line of an exception group's own traceback."""


def exception_line(error: str | None) -> str:
    """The exception line of an error text: for a Python traceback the line naming the exception
    raised last (`ValueError: bad sku`; of a chain, the one the handler let out), else the text's
    first line (`HTTP 500: ...`); empty for no error."""
    lines = [line.rstrip() for line in (error or "").splitlines()]
    lines = lines[next((i for i, line in enumerate(lines) if line), len(lines)) :]
    if not lines:
        return ""
    first = lines[0].strip()
    if first == TRACEBACK:
        last = max(i for i, line in enumerate(lines) if line == TRACEBACK)
        return next((line for line in lines[last + 1 :] if line and not line[0].isspace()), first)
    if first == GROUP_TRACEBACK:
        own = (line.removeprefix(GROUP_LINE) for line in lines[1:] if line.startswith(GROUP_LINE))
        return next((line for line in own if line and not line[0].isspace()), first)
    return first
