"""Column types shared by the table definitions and the statements, the same on every engine."""

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa


class UtcDateTime(sa.TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every engine (SQLite stores naive ISO text: its DATETIME
    type writes the fields of the UTC time and ignores the zone)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: tablequeue needs timezone-aware times")
        return value.astimezone(UTC)

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):  # a value computed by SQL text on SQLite
            value = datetime.fromisoformat(value)
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
