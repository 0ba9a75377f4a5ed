"""What tablequeue asks of a database engine (`Dialect`), and one package per engine.

Adding an engine means a package beside `postgresql/`: a `Dialect` subclass in its
`dialect.py` (supplying the SQL parts, overriding whole operations where its SQL differs),
its statements and its JSON index strategy, registered in `DIALECTS`; plus an entry in
tests/conftest.py's `ENGINES` with its URL fixture, and its golden SQL. The conformance suite
runs unchanged.
"""

from .dialect import Dialect
from .mariadb.dialect import DIALECT as MARIADB
from .mssql.dialect import DIALECT as MSSQL
from .postgresql.dialect import DIALECT as POSTGRESQL
from .sqlite.dialect import DIALECT as SQLITE
from .types import (
    Capabilities,
    EnqueueBatch,
    FinishOutcome,
    GroupLease,
    JsonKind,
    JsonPath,
    LeasedRows,
    LeaseRequest,
    SettleRequest,
    notify_channel,
)

DIALECTS: dict[str, Dialect] = {
    "postgresql": POSTGRESQL,
    "sqlite": SQLITE,
    "mariadb": MARIADB,
    "mssql": MSSQL,
}
"""Every engine, by SQLAlchemy backend name."""

__all__ = [
    "DIALECTS",
    "MARIADB",
    "MSSQL",
    "POSTGRESQL",
    "SQLITE",
    "Capabilities",
    "Dialect",
    "EnqueueBatch",
    "FinishOutcome",
    "GroupLease",
    "JsonKind",
    "JsonPath",
    "LeaseRequest",
    "LeasedRows",
    "SettleRequest",
    "for_url_scheme",
    "notify_channel",
]


def for_url_scheme(scheme: str) -> tuple[Dialect, str] | None:
    """The dialect serving a URL scheme users write, and the scheme it connects with."""
    for dialect in DIALECTS.values():
        if scheme in dialect.url_schemes:
            return dialect, dialect.url_schemes[scheme]
    return None
