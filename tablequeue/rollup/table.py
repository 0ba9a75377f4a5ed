"""The rollup table and its histogram, defined on the storage floor (`storage/schema.py` and
`storage/rollup.py`, since the registry creates it); named here for the rollup's readers and
writers."""

from ..storage.rollup import (
    ADDED_UP,
    HORIZON,
    LARGEST,
    LATEST,
    bucket_of,
    ensure_rollup,
    percentile,
)
from ..storage.schema import BUCKET_BOUNDS, BUCKET_COLUMNS, BUCKETS, ROLLUP_TABLE, rollup_table

__all__ = [
    "ADDED_UP",
    "BUCKETS",
    "BUCKET_BOUNDS",
    "BUCKET_COLUMNS",
    "HORIZON",
    "LARGEST",
    "LATEST",
    "ROLLUP_TABLE",
    "bucket_of",
    "ensure_rollup",
    "percentile",
    "rollup_table",
]
