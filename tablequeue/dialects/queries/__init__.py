"""Every hot statement of a queue table, one named method each, by area: this project's
`queries.sql`.

The statements are SQLAlchemy Core composed from a dialect's SQL parts (`now`, an upsert, a
locking hint, a per-row source); the rendering of each per engine is kept under
`tests/core/golden/<engine>/<statement>.sql`. A `Queries` is made once per table and builds
each statement on first use (`statement`: building costs more than running it). The areas:
`lease`, `enqueue`, `settle`, `sweep`, `counts` (one class each, composed here), and `history`
(the results and attempts tables, beside them); an engine whose SQL differs subclasses
`Queries` and overrides only those statements (`mariadb/queries.py`, `mssql/queries.py`).

Built-in statuses appear as SQL literals so that the partial indexes on them serve prepared
(generic) plans; everything user-supplied is a bound parameter (`b_*`).
"""

from .base import HELD_COLUMNS, TableQueries, statement, swept_columns
from .counts import CountQueries
from .enqueue import EnqueueQueries
from .lease import LeaseQueries
from .settle import SettleQueries
from .sweep import SweepQueries


class Queries(LeaseQueries, EnqueueQueries, SettleQueries, SweepQueries, CountQueries):
    """The hot statements of one queue table on one engine."""


__all__ = ["HELD_COLUMNS", "Queries", "TableQueries", "statement", "swept_columns"]
