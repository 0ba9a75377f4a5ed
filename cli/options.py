"""What every command shares: `--db` and `--json`, one-line errors (the output: output.py)."""

from __future__ import annotations

import difflib
import functools
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import click
import pydantic

from tablequeue import connect
from tablequeue.errors import QueueNotFound, TableQueueError

from .model_options import EnvOption

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def validation_line(error: pydantic.ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"])
        text = str(item["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {text}" if where else text)
    return "; ".join(problems)


def friendly_errors(function: F) -> F:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except QueueNotFound as error:
            fail(_with_suggestion(error, kwargs))
        except TableQueueError as error:
            fail(str(error))
        except pydantic.ValidationError as error:
            fail(f"invalid message: {validation_line(error)}")
        except RecursionError:
            fail("input nested too deeply")
        except BrokenPipeError:
            sys.exit(0)

    return wrapper  # type: ignore[return-value]


def _with_suggestion(error: QueueNotFound, options: dict[str, Any]) -> str:
    """The error, or "did you mean" the existing queue whose name is closest to the one given."""
    name = options.get("queue_name") or options.get("name") or options.get("queue")
    db_url = options.get("db_url") or options.get("db")
    if not isinstance(name, str) or not isinstance(db_url, str):
        return str(error)
    try:
        with connect(db_url) as database:
            existing = [row["name"] for row in database.queues()]
    except TableQueueError:  # the database went away since: the error as it was
        return str(error)
    matches = difflib.get_close_matches(name, existing, n=1)
    if not matches:
        return str(error)
    where = f" in {error.where}" if error.where else ""
    return f"{error.public}{where}: did you mean {matches[0]!r}?"


def db_option(description: str) -> Callable[[F], F]:
    """`--db URL`, required, also from TABLEQUEUE_DB."""
    return click.option(
        "--db",
        "db_url",
        cls=EnvOption,
        envvar="TABLEQUEUE_DB",
        required=True,
        metavar="URL",
        help=description,
    )


def db_options(function: F) -> F:
    """`--db` and `--json` for the commands that work on a database, with one-line errors."""
    function = db_option(
        "Database URL, e.g. sqlite:///queues.db or postgresql://user:pw@host/db [env TABLEQUEUE_DB]"
    )(function)
    function = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")(
        function
    )
    return friendly_errors(function)
