"""Validation of every name that ends up near SQL text: queue names, table names, statuses.

Identifiers are validated here and then always quoted by SQLAlchemy's dialect; values are bound.
"""

import re
import zlib
from typing import Literal

from .errors import InvalidInput

# The `^...$` form is published in the CRD schema (RE2, where `$` is the end of the text); Python
# checks with `fullmatch`, because its `$` also matches before a final newline.
QUEUE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
TOPIC_NAME = re.compile(r"^[a-z]([-.a-z0-9]{0,61}[a-z0-9])?$")
TABLE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
STATUS = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
RESERVED_TABLE_PREFIX = "tablequeue_"
SYSTEM_TABLE_PREFIXES = {"pg_": "PostgreSQL's system catalogs", "sqlite_": "SQLite's own tables"}
"""Prefixes engines keep for themselves: `pg_class` would name PostgreSQL's catalog (pg_catalog is
searched first), and SQLite refuses `sqlite_` names. Refused on every engine, so a Queue moves."""

PENDING = "Pending"
SLEEPING = "Sleeping"
LEASED = "Leased"
PROCESSED = "Processed"
ERROR = "Error"
ABANDONED = "Abandoned"
CANCELLED = "Cancelled"
EXPIRED = "Expired"

LEASABLE = (PENDING, SLEEPING)
GROUP_HOLDING = (PENDING, SLEEPING, LEASED)
"""Statuses of a message that hold the messages behind it in its group (`spec.groups`)."""
GROUP_HOLDING_ON_FAILURE = (ERROR, ABANDONED)
"""Statuses that hold a group too when its queue says `onFailure: hold`."""
BUILT_IN = (PENDING, SLEEPING, LEASED, PROCESSED, ERROR, ABANDONED, CANCELLED, EXPIRED)
FINAL = (PROCESSED, ERROR, ABANDONED, CANCELLED, EXPIRED)

DedupeMode = Literal["replace", "keep", "window"]
"""What enqueueing a messageId that exists does (`spec.dedupe`): replace the row, keep it, or
keep it while it is younger than a window."""


def _shown(value: str) -> str:
    return repr(value if len(value) <= 80 else value[:77] + "...")


def queue_name(name: str) -> str:
    if not isinstance(name, str) or not QUEUE_NAME.fullmatch(name):
        raise InvalidInput(
            f"invalid queue name {_shown(str(name))}: use 1-63 lowercase letters, digits and '-', "
            "starting with a letter and not ending with '-'"
        )
    return name


def topic_name(name: str) -> str:
    if not isinstance(name, str) or not TOPIC_NAME.fullmatch(name):
        raise InvalidInput(
            f"invalid topic name {_shown(str(name))}: use 1-63 lowercase letters, digits, '-' "
            "and '.', starting with a letter and ending with a letter or digit"
        )
    return name


def table_name(name: str) -> str:
    if not isinstance(name, str) or not TABLE_NAME.fullmatch(name):
        raise InvalidInput(
            f"invalid table name {_shown(str(name))}: use 1-63 lowercase letters, digits and '_', "
            "starting with a letter"
        )
    if name.startswith(RESERVED_TABLE_PREFIX):
        raise InvalidInput(
            f"invalid table name {_shown(name)}: the prefix {RESERVED_TABLE_PREFIX!r} is reserved"
        )
    for prefix, owner in SYSTEM_TABLE_PREFIXES.items():
        if name.startswith(prefix):
            raise InvalidInput(
                f"invalid table name {_shown(name)}: the prefix {prefix!r} is reserved for "
                f"{owner} (set spec.table to another name)"
            )
    return name


def table_for_queue(queue: str) -> str:
    return table_name(queue_name(queue).replace("-", "_"))


def status(value: str) -> str:
    if not isinstance(value, str) or not STATUS.fullmatch(value):
        raise InvalidInput(
            f"invalid status {_shown(str(value))}: use 1-64 letters, digits, '_' and '-', "
            "starting with a letter"
        )
    return value


def settable_status(value: str) -> str:
    """A status a person or an enqueue may set: anything valid except Leased."""
    status(value)
    if value == LEASED:
        raise InvalidInput("status 'Leased' is set only by leasing; choose another status")
    return value


def index_name(table_name: str, suffix: str) -> str:
    """`<table>_<suffix>`, shortened with a checksum to fit the 63-character identifier limit."""
    name = f"{table_name}_{suffix}"
    if len(name) <= 63:
        return name
    checksum = f"{zlib.crc32(table_name.encode()):08x}"
    return f"{table_name[: 63 - len(suffix) - 10]}_{checksum}_{suffix}"


def lease_index_name(table_name: str) -> str:
    """The index that orders a queue's leasable messages (priority, process_after, id)."""
    return index_name(table_name, "lease")
