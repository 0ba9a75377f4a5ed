"""The `tablequeue` command: admin verbs on queues and messages, and the process launchers
(`worker`, `api`, `operator`, `dev`). Mistakes print one line on stderr and exit 1."""

from .main import main

__all__ = ["main"]
