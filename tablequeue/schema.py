"""Moved to `tablequeue.storage.schema`; these names stay importable from here."""

from .sqltypes import UtcDateTime
from .storage.schema import REGISTRY_TABLE, SCHEMA_VERSION, migrate, queue_table, registry_table

__all__ = [
    "REGISTRY_TABLE",
    "SCHEMA_VERSION",
    "UtcDateTime",
    "migrate",
    "queue_table",
    "registry_table",
]
