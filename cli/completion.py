"""Shell completion of queue names, read from the database the command would use (`--db` on the
line so far, else TABLEQUEUE_DB). Completion must never fail a shell: any error completes
nothing."""

from __future__ import annotations

import os

import click
from click.shell_completion import CompletionItem

from tablequeue import connect


def queue_names(ctx: click.Context, _: click.Parameter, incomplete: str) -> list[CompletionItem]:
    url = ctx.params.get("db_url") or os.environ.get("TABLEQUEUE_DB")
    if not url:
        return []
    try:
        with connect(url) as database:
            names = [str(row["name"]) for row in database.queues()]
    except Exception:
        return []
    return [CompletionItem(name) for name in names if name.startswith(incomplete)]
