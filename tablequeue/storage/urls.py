"""Database URLs as users write them: `postgresql://user:pass@host/db` (psycopg 3 underneath),
`postgresql+psycopg://...`, `postgres://...`, `sqlite:///path/to/file.db`. Each dialect owns its
schemes."""

import re

import sqlalchemy as sa

from ..dialects import DIALECTS, Dialect, for_url_scheme
from ..errors import InvalidInput


def dialect_for_url(url: str) -> tuple[Dialect, sa.URL]:
    """The dialect serving a URL, and the URL with the driver tablequeue connects with."""
    try:
        parsed = sa.make_url(url)
    except Exception:
        raise InvalidInput(
            "invalid database URL: expected e.g. postgresql://user:password@host:5432/db "
            "or sqlite:///path/to/file.db"
        ) from None
    found = for_url_scheme(parsed.drivername)
    if found is None:
        supported = " or ".join(dialect.url_hint for dialect in DIALECTS.values())
        raise InvalidInput(
            f"unsupported database URL scheme {parsed.drivername!r} in "
            f"{shown_url(parsed)}: use {supported}"
        )
    dialect, scheme = found
    return dialect.for_url(parsed.set(drivername=scheme))


def engine_name(url: str) -> str:
    """The engine a database URL names (`postgresql`, `sqlite`, `mariadb`, `mssql`);
    InvalidInput for a URL tablequeue cannot use."""
    dialect, _ = dialect_for_url(url)
    return dialect.name


def listen_url(url: str, dialect: Dialect) -> tuple[Dialect, sa.URL]:
    """A worker's separate URL for LISTEN (`--listen-db`, behind a transaction pooler): the
    same engine as its database, reaching the server directly (or a session-mode pool)."""
    listener, parsed = dialect_for_url(url)
    if listener.name != dialect.name:
        raise InvalidInput(
            f"the listen URL {shown_url(url)} is {listener.name}, the database {dialect.name}: "
            "give a URL of the same server"
        )
    if getattr(listener, "pooler", None) is not None:
        raise InvalidInput(
            f"the listen URL {shown_url(url)} goes through a transaction pooler: LISTEN needs "
            "a direct connection (leave out ?pooler=)"
        )
    return listener, parsed


MASK = "***"
_SECRET_IN_VALUE = re.compile(r"\b(pwd|password)\s*=\s*(\{[^}]*\}|[^;]*)", re.IGNORECASE)
"""`PWD=...` / `Password=...` inside an ODBC connection string given as a query parameter."""


def _is_secret_key(key: str) -> bool:
    lowered = key.lower()
    return "password" in lowered or lowered in {"pwd", "passwd", "secret"}


def _masked_value(key: str, value: str) -> str:
    if _is_secret_key(key):
        return MASK
    return _SECRET_IN_VALUE.sub(lambda found: f"{found.group(1)}={MASK}", value)


def shown_url(url: str | sa.URL) -> str:
    """The URL as every message, log line and status shows it: without any password.

    Masks the password of `user:password@`, query parameters such as `?password=` (which
    psycopg accepts) and `PWD=` inside an ODBC connection string. The one function for it.
    """
    try:
        parsed = sa.make_url(url)
    except Exception:
        return "(an unparsable database URL)"
    query = {
        key: (
            tuple(_masked_value(key, item) for item in value)
            if isinstance(value, tuple)
            else _masked_value(key, value)
        )
        for key, value in parsed.query.items()
    }
    shown = parsed.set(query=query).render_as_string(hide_password=True)
    return shown.replace("%2A%2A%2A", MASK)


DECLARED_DIALECTS = {"mysql": "mariadb"}
"""`spec.database.dialect` values that name an engine differently from its dialect module."""


def check_declared_dialect(declared: str | None, dialect: Dialect, url: str) -> None:
    """Refuse a Queue whose `spec.database.dialect` is not the engine its URL connects to."""
    if declared is None or DECLARED_DIALECTS.get(declared, declared) == dialect.name:
        return
    raise InvalidInput(
        f"spec.database.dialect is {declared!r} but the database URL {shown_url(url)} is "
        f"{dialect.name}: correct the dialect or leave it out (it defaults to the URL's)"
    )
