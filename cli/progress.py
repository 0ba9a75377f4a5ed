"""Progress on stderr for commands that can take a while (rich), only for a person watching.

Shown when both stdout and stderr are terminals and `--json` is not given; otherwise nothing at
all is written, so scripts and pipes see exactly the output they always saw. The display is
transient: it is erased when the step ends, leaving the command's own output.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

Advance = Callable[[int], None]


def wanted(as_json: bool) -> bool:
    """A person is watching: stdout and stderr are terminals and the output is not JSON."""
    return not as_json and sys.stdout.isatty() and sys.stderr.isatty()


def _nothing(_: int) -> None:
    return None


@contextlib.contextmanager
def step(
    as_json: bool, description: str, total: int | None = None, unit: str = "items"
) -> Iterator[Advance]:
    """A progress display for one step; yields `advance(n)`. With `total` a bar (in bytes when
    `unit` is "bytes"), without one a spinner with the elapsed time (one long statement)."""
    if not wanted(as_json):
        yield _nothing
        return
    columns: list[object] = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        count = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
        columns += [BarColumn(), count, TimeRemainingColumn()]
    columns.append(TimeElapsedColumn())
    console = Console(file=sys.stderr)
    with Progress(*columns, console=console, transient=True) as progress:  # type: ignore[arg-type]
        task = progress.add_task(description, total=total)
        yield lambda n: progress.advance(task, n)
