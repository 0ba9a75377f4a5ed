"""One protocol for every database engine (`base.Dialect`), one module per engine.

Adding an engine means one module with a `SqlDialect` subclass (overriding whole operations
where its SQL differs), registered in `DIALECTS`, plus an entry in tests/conftest.py's
`ENGINES` with its URL fixture, and its golden SQL; the conformance suite runs unchanged.
"""

from . import mssql, mysql, postgresql, sqlite
from .base import Capabilities, Dialect, JsonKind, JsonPath, notify_channel
from .sql import SqlDialect

DIALECTS: dict[str, Dialect] = {
    "postgresql": postgresql.DIALECT,
    "sqlite": sqlite.DIALECT,
    "mariadb": mysql.DIALECT,
    "mssql": mssql.DIALECT,
}
"""Every engine, by SQLAlchemy backend name."""

__all__ = [
    "DIALECTS",
    "Capabilities",
    "Dialect",
    "JsonKind",
    "JsonPath",
    "SqlDialect",
    "for_url_scheme",
    "notify_channel",
]


def for_url_scheme(scheme: str) -> tuple[Dialect, str] | None:
    """The dialect serving a URL scheme users write, and the scheme it connects with."""
    for dialect in DIALECTS.values():
        if scheme in dialect.url_schemes:
            return dialect, dialect.url_schemes[scheme]
    return None
