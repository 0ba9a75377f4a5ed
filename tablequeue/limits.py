"""Every limit of a message, defined once: models, queue operations, API and worker import these."""

MAX_PRIORITY = 32767
"""Priorities are SMALLINT: -32768..32767."""
MAX_MESSAGE_ID_LENGTH = 400
MAX_CORRELATION_ID_LENGTH = 128
"""A caller's correlation id: indexed, so short enough for every engine's index key."""
MAX_LABEL_LENGTH = 200
"""A message's human label: one line, as a list row shows it."""
MAX_ERROR_SEARCH_LENGTH = 200
"""The longest text a search looks for in messages' last errors."""
MAX_GROUP_KEY_LENGTH = 200
"""A message's group key (`spec.groups`): one line, indexed with the id."""
MAX_SECONDS = 100 * 366 * 86400
"""Longest delay, expiry or lease: far enough, and inside every engine's date range."""
MAX_ID = 2**63 - 1
"""Ids are BIGINT: a larger number is no message (and would fail in the driver)."""
MAX_JSON_DEPTH = 100
"""Deeper JSON is refused: it could be stored but not returned (pydantic stops at 255)."""
MAX_SCHEDULE_TEMPLATE_BYTES = 64 << 10
"""A schedule's message and headers together, as JSON text: templates stay small, and checking
them (on every apply and every read of the queue's settings) stays cheap."""
MAX_LEASE_BATCH = 10_000
"""Most messages one lease may take."""
PURGE_BATCH = 5_000
"""Rows one purge statement deletes (purging runs as many as it takes)."""
ATTEMPTS_KEPT = 20
"""Failed or lost attempts kept per message: older ones go when a newer one is recorded."""

WORKER_ID_LENGTH = 200
"""The longest worker id: as a message's lease_owner (a worker's id is its lease owner)."""
HOST_LENGTH = 253
"""The longest host name a heartbeat keeps (DNS's limit)."""
