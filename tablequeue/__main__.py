"""`python -m tablequeue`: the `tablequeue` command.

The command is built above the core (`tablequeue.cli`), which the core never imports: it is
found as the console script the distribution installs.
"""

from importlib.metadata import entry_points

[command] = entry_points(group="console_scripts", name="tablequeue")
command.load()()
