"""`tablequeue healthcheck`: the container image's HEALTHCHECK, right for both commands the image
runs. It reads the command line and environment of the serving process (PID 1 in a container:
`tablequeue worker ...` or `tablequeue api ...`), finds the address that command listens on the
way the command itself does (its `--host`/`--port` flags, then its TABLEQUEUE_* variables, then
the settings' defaults) and asks its `/livez`, with the standard library only (no curl)."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click
from pydantic_settings import BaseSettings

from tablequeue.errors import InvalidInput
from tablequeue.settings import api as api_settings
from tablequeue.settings.api import ApiSettings
from tablequeue.settings.worker import WorkerSettings, env_name

from .options import friendly_errors

ANY_ADDRESS = {"0.0.0.0", "::", "", "localhost"}


SETTINGS: dict[str, tuple[type[BaseSettings], Callable[[str], tuple[str, ...]]]] = {
    "worker": (WorkerSettings, lambda field: (env_name(field),)),
    "api": (ApiSettings, api_settings.env_names),
}
"""Each process command's settings model and the variables of its fields, in lookup order."""
PROCESS_COMMANDS = tuple(SETTINGS)


@dataclass(frozen=True)
class Served:
    command: str
    host: str
    port: int

    @property
    def livez(self) -> str:
        host = "127.0.0.1" if self.host in ANY_ADDRESS else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/livez"


def _process(pid: int) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of a process (/proc)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")[:-1]
    except OSError as error:
        raise InvalidInput(f"cannot read process {pid}: {error.strerror}") from None
    pairs = (item.decode(errors="replace").partition("=") for item in environ)
    return [a.decode(errors="replace") for a in argv], {k: v for k, _, v in pairs}


def served_by(argv: list[str], environ: dict[str, str]) -> Served:
    """Where `tablequeue worker|api ARGS` listens, given its command line and environment."""
    found = next(
        (
            i
            for i, argument in enumerate(argv)
            if argument in PROCESS_COMMANDS
            and any(Path(a).name in ("tablequeue", "tablequeue.cli") for a in argv[:i])
        ),
        None,
    )
    if found is None:
        shown = " ".join(argv)[:200]
        raise InvalidInput(
            f"process runs {shown!r}, not `tablequeue worker` or `tablequeue api`: give --port"
        )
    command, arguments = argv[found], argv[found + 1 :]
    model, variables = SETTINGS[command]
    host = _setting(arguments, "--host", variables("host"), environ)
    port = _setting(arguments, "--port", variables("port"), environ)
    defaults = model.model_fields
    return Served(command, host or defaults["host"].default, int(port or defaults["port"].default))


def _setting(
    arguments: list[str], flag: str, variables: tuple[str, ...], environ: dict[str, str]
) -> str | None:
    """A flag's value (`--port 8000` or `--port=8000`; the last one wins, as click's), else
    the first variable set (an empty one counts as unset)."""
    value = None
    for index, argument in enumerate(arguments):
        if argument == flag and index + 1 < len(arguments):
            value = arguments[index + 1]
        elif argument.startswith(flag + "="):
            value = argument.partition("=")[2]
    return value or next((environ[v] for v in variables if environ.get(v)), None)


def probe(url: str, timeout: float) -> str | None:
    """None when `url` answers 200; otherwise why not."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return None if response.status == 200 else f"{url} answered {response.status}"
    except urllib.error.HTTPError as error:
        return f"{url} answered {error.code}"
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        return f"{url}: {reason}"


@click.command()
@click.option(
    "--pid",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="The serving process (PID 1 in a container) whose command and environment say where "
    "it listens.",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    help="Probe this port of 127.0.0.1 instead of reading the process.",
)
@click.option(
    "--timeout", type=float, default=2.0, show_default=True, help="Seconds to wait for /livez."
)
@friendly_errors
def healthcheck(pid: int, port: int | None, timeout: float) -> None:
    """Exit 0 when the worker or API of this container answers /livez (the image's
    HEALTHCHECK); otherwise one line saying why, and exit 1."""
    if port is not None:
        served = Served("given", "127.0.0.1", port)
    else:
        served = served_by(*_process(pid))
        if served.port == 0:
            raise InvalidInput(f"the {served.command} listens on a free port it chose: give --port")
    problem = probe(served.livez, timeout)
    if problem is not None:
        raise InvalidInput(f"{served.command} unhealthy: {problem}")
    click.echo(f"{served.command} healthy: {served.livez}")
