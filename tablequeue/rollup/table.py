"""The rollup table and its histogram, defined on the storage floor (`storage/rollup.py`, since
the registry creates it); named here for the rollup's readers and writers."""

from ..storage.rollup import (
    ADDED_UP,
    BUCKET_BOUNDS,
    BUCKET_COLUMNS,
    BUCKETS,
    HORIZON,
    LARGEST,
    LATEST,
    ROLLUP_TABLE,
    SMALLEST,
    bucket_of,
    ensure_rollup,
    percentile,
    rollup_table,
)

__all__ = [
    "ADDED_UP",
    "BUCKETS",
    "BUCKET_BOUNDS",
    "BUCKET_COLUMNS",
    "HORIZON",
    "LARGEST",
    "LATEST",
    "ROLLUP_TABLE",
    "SMALLEST",
    "bucket_of",
    "ensure_rollup",
    "percentile",
    "rollup_table",
]
