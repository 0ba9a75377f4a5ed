"""`python -m tablequeue`: the `tablequeue` command. Not part of the core library: it stands on
the top floor with `tablequeue.cli` (see pyproject's import contracts)."""

from tablequeue.cli import main

main()
