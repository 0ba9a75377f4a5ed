"""The one output style of every command: `--json` prints the data as JSON; without it the same
data is a table whose columns are exactly the JSON's keys.

- A list of objects is one row per object, one column per key. An object is one line per key
  (key, value); a non-empty list of objects inside it (a message's `attemptHistory`, the
  `workers` of `tablequeue workers`) follows as a table of its own, named by its key.
- On a terminal: rich tables, fitted to the terminal's width (a long value, such as a custom
  status, wraps inside its cell). A list too wide for the terminal (a message has 22 keys) is
  shown one object at a time, key and value, as psql's expanded display (`\\x auto`).
- When stdout is not a terminal (a pipe, a file): tab-separated values without colour, a header
  line of the keys first; an object is `key<TAB>value` lines; a table inside it follows after a
  blank line and a `# key` line. Tabs, line breaks and backslashes in a value are written `\\t`,
  `\\n`, `\\r` and `\\\\`, so that every row is one line. A list of more than 1,000 objects is
  written so on a terminal too (an `enqueue -f` of a big file): nobody reads that many rows on
  a screen, and rich takes about a second of CPU per 1,500 rows to lay them out.

Cells: strings as they are, numbers and `true`/`false`/empty (null) as in the JSON, objects and
lists as compact JSON. An empty list prints nothing on stdout and its note (`no messages`) on
stderr.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

WIDEST_CELL = 40
"""Above this many characters a cell counts as this wide when deciding whether a list fits."""
CELL_PADDING = 3
MAX_TABLE_ROWS = 1000
"""Longer lists are tab-separated on a terminal too."""


def emit(as_json: bool, data: Any, empty: str = "nothing found") -> None:
    """Print `data` (what `--json` shows) as JSON or as the table of its keys."""
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, default=str))
        return
    plain = json.loads(json.dumps(data, ensure_ascii=False, default=str))
    if plain == []:
        click.echo(empty, err=True)
        return
    if sys.stdout.isatty() and _rows_in(plain) <= MAX_TABLE_ROWS:
        _terminal(plain)
    else:
        click.echo("\n".join(_tab_separated(plain)))


def _rows_in(data: Any) -> int:
    fields, tables = _sections(data)
    return max([len(fields) if isinstance(fields, list) else 1, *map(len, tables.values())])


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _sections(data: Any) -> tuple[list[dict[str, Any]] | dict[str, Any], dict[str, list[Any]]]:
    """What an object shows as key and value, and its lists of objects (tables of their own)."""
    if not isinstance(data, dict):
        return data, {}
    tables = {k: v for k, v in data.items() if _is_records(v)}
    return {k: v for k, v in data.items() if k not in tables}, tables


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _columns(records: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(key for record in records for key in record))


# --- not a terminal: tab-separated values ----------------------------------------------------


def _escaped(value: Any) -> str:
    text = cell(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _tab_separated(data: Any) -> list[str]:
    fields, tables = _sections(data)
    lines = _rows(fields) if isinstance(fields, list) else _pairs(fields)
    for key, records in tables.items():
        lines += ["", f"# {key}", *_rows(records)]
    return lines


def _rows(records: list[Any]) -> list[str]:
    if not _is_records(records):
        return [_escaped(value) for value in records]
    columns = _columns(records)
    lines = ["\t".join(columns)]
    lines += ["\t".join(_escaped(record.get(key)) for key in columns) for record in records]
    return lines


def _pairs(fields: dict[str, Any]) -> list[str]:
    return [f"{key}\t{_escaped(value)}" for key, value in fields.items()]


# --- a terminal: rich tables -----------------------------------------------------------------


def _terminal(data: Any) -> None:
    console = Console(soft_wrap=False)
    fields, tables = _sections(data)
    if isinstance(fields, list):
        _print_records(console, fields, title=None)
    elif fields:
        console.print(_key_value(fields))
    for key, records in tables.items():
        _print_records(console, records, title=key)


def _print_records(console: Console, records: list[Any], title: str | None) -> None:
    if not _is_records(records):
        for value in records:
            console.print(cell(value), markup=False, highlight=False)
        return
    columns = _columns(records)
    if _fits(records, columns, console.width):
        table = Table(*columns, title=title, box=box.SIMPLE_HEAD, title_justify="left")
        for column, key in zip(table.columns, columns, strict=True):
            column.overflow = "fold"
            if all(_is_number(r.get(key)) for r in records if r.get(key) is not None):
                column.justify = "right"
        for record in records:
            table.add_row(*(Text(cell(record.get(key))) for key in columns))
        console.print(table)
        return
    for number, record in enumerate(records, start=1):  # expanded: one object at a time
        label = f"{title} {number}" if title else f"{number}"
        console.print(_key_value(record, title=f"[ {label} ]"))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fits(records: list[dict[str, Any]], columns: list[str], width: int) -> bool:
    natural = sum(
        min(max(len(key), *(len(cell(r.get(key))) for r in records)), WIDEST_CELL) + CELL_PADDING
        for key in columns
    )
    return natural <= width


def _key_value(fields: dict[str, Any], title: str | None = None) -> Table:
    table = Table(
        box=box.SIMPLE, show_header=False, title=title, title_justify="left", pad_edge=False
    )
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in fields.items():
        table.add_row(key, Text(cell(value)))
    return table
