"""The statements an autoscaler outside tablequeue runs itself, as SQL text: KEDA's
postgresql scaler reads a queue table with no tablequeue process in the path."""

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from .dialects import POSTGRESQL
from .storage.schema import queue_table, rate_limit_table, registry_table


def postgresql_load_query(table_name: str) -> str:
    """`Queries.load` of a queue table (due plus leased messages) as one line of PostgreSQL.

    The table name is quoted by the compiler when it needs to be (validate it first); no
    value is formatted in."""
    metadata = sa.MetaData()
    table = queue_table(metadata, table_name, POSTGRESQL)
    queries = POSTGRESQL.queries(table, registry_table(metadata), rate_limit_table(metadata))
    compiled = queries.load().compile(dialect=postgresql.dialect())  # type: ignore[no-untyped-call]
    return " ".join(str(compiled).split())
