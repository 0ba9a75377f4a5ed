"""Database URLs as users write them: `postgresql://user:pass@host/db` (psycopg 3 underneath),
`postgresql+psycopg://...`, `postgres://...`, `sqlite:///path/to/file.db`. Each dialect owns its
schemes."""

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
            f"{parsed.render_as_string(hide_password=True)}: use {supported}"
        )
    dialect, scheme = found
    parsed = parsed.set(drivername=scheme)
    dialect.check_url(parsed)
    return dialect, parsed


def shown_url(url: str) -> str:
    """The URL as messages show it: without its password."""
    return sa.make_url(url).render_as_string(hide_password=True)


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
