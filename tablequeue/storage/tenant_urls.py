"""Database URLs that cross a privilege boundary: a tenant's Secret, read by the operator, which
holds keys no tenant may reach. Drivers act on the client for many URL parameters: PyMySQL's
`local_infile` sends any file the server asks for, `read_default_file` reads an option file,
libpq's `sslkey`, `passfile`, `service` and `host=/path` read the client's files and sockets,
an ODBC `DRIVER=/path` loads a library. Such a URL keeps only what its dialect names harmless
(`Dialect.tenant_url_rules`), a host name, and a connect timeout no longer than the client's
own; anything else is refused before any connection, with the same answer whatever the
client's file system holds.

The API and the CLI take URLs from whoever runs them, who has their own files anyway: they
connect with any parameter (docs/getting-started/kubernetes.md, the operator's limits)."""

from __future__ import annotations

import math
import re

import sqlalchemy as sa

from ..errors import InvalidInput
from .timeouts import DatabaseTimeouts
from .urls import dialect_for_url, shown_url

HOST = re.compile(r"[A-Za-z0-9._:\[\],-]+")
"""Host names, addresses and `host1,host2` lists: never a path (`/` or a `%2F` escape)."""
ODBC_SYNTAX = re.compile(r"[;{}]")


def tenant_url(url: str) -> str:
    """`url` as a tenant may give it: the same URL with its connect timeout at most the
    process's own (`TABLEQUEUE_DB_CONNECT_TIMEOUT`, 10 s by default); InvalidInput naming the
    first thing refused."""
    connect_seconds = DatabaseTimeouts.from_environment().connect_seconds
    dialect, resolved = dialect_for_url(url)
    rules = dialect.tenant_url_rules(resolved)
    parsed = sa.make_url(url)
    shown = shown_url(url)
    if rules.needs_host and not HOST.fullmatch(parsed.host or ""):
        raise InvalidInput(
            f"the database URL {shown} names no server host (a socket path, or a name the "
            "operator would look up in its own files): give host[:port] in the URL"
        )
    if rules.odbc:
        _check_odbc_parts(parsed, shown)
    query: dict[str, str] = {}
    for key, value in parsed.query.items():
        name = key.lower() if rules.odbc else key
        if name not in rules.parameters:
            allowed = ", ".join(sorted(rules.parameters)) or "none"
            raise InvalidInput(
                f"the database URL {shown} sets the parameter {key!r}, which the operator does "
                f"not pass to the driver (some make it read or send the operator's own files); "
                f"a Queue's URL may set: {allowed}"
            )
        if not isinstance(value, str):
            raise InvalidInput(f"the database URL {shown} sets the parameter {key!r} twice")
        if name == "driver" and ("/" in value or "\\" in value):
            raise InvalidInput(
                f"the database URL {shown} names an ODBC driver by path: name an installed "
                "driver (e.g. driver=FreeTDS)"
            )
        if name == rules.connect_timeout:
            value = _capped(key, value, connect_seconds, shown)
        query[key] = value
    if rules.odbc and not any(key.lower() == "driver" for key in query):
        raise InvalidInput(
            f"the database URL {shown} names no ODBC driver (without one, the host is a DSN "
            "looked up in the operator's own files): add driver=NAME"
        )
    return parsed.set(query=query).render_as_string(hide_password=False)


def _capped(key: str, value: str, connect_seconds: float | None, shown: str) -> str:
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise InvalidInput(
            f"the database URL {shown} sets {key}={value!r}: expected a positive number of seconds"
        )
    if connect_seconds:
        seconds = min(seconds, connect_seconds)
    return str(max(2, math.ceil(seconds)))


def _check_odbc_parts(parsed: sa.URL, shown: str) -> None:
    """No part of an ODBC URL may close its key and add another (`...;DRIVER=/lib.so`)."""
    parts = [parsed.username, parsed.password, parsed.host, parsed.database]
    for value in parsed.query.values():
        parts.extend([value] if isinstance(value, str) else value)
    if any(part is not None and ODBC_SYNTAX.search(str(part)) for part in parts):
        raise InvalidInput(
            f"the database URL {shown} holds ';', '{{' or '}}', which would add keys of its own "
            "to the ODBC connection string"
        )
