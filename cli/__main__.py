"""`python -m tablequeue.cli`: the `tablequeue` command."""

from .main import main

main()
