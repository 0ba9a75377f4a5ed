"""Charts of the past without Prometheus: a per-minute rollup per queue (`tablequeue_rollup`),
written by the workers from counts kept in memory, read back as chart series.

`table` defines the table and the latency histogram, `write` adds a process's counts and
samples and prunes old rows, `read` turns rows into per-step series with percentiles.
"""

from .read import WINDOWS, chart_series
from .table import BUCKET_BOUNDS, HORIZON, ROLLUP_TABLE, percentile, rollup_table
from .write import MinuteCounts, minute_of, prune, write_minutes

__all__ = [
    "BUCKET_BOUNDS",
    "HORIZON",
    "ROLLUP_TABLE",
    "WINDOWS",
    "MinuteCounts",
    "chart_series",
    "minute_of",
    "percentile",
    "prune",
    "rollup_table",
    "write_minutes",
]
