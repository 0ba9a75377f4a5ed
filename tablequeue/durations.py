"""Durations as Queue resources write them: `"90s"`, `"1h30m"`, `"2w"`, a number of seconds,
or `"forever"`; parsed, formatted and described for the CRD's schema. Points in time as a search
names them: ISO 8601 with an offset, or a duration ago (`"-1h"`)."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema

from .errors import InvalidInput

FOREVER = "forever"

# One regex for the schema (RE2/ECMA compatible: no lookarounds) and for parsing.
DURATION_PATTERN = r"^(forever|([0-9]+w)?([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+(\.[0-9]+)?s)?)$"
_DURATION = re.compile(DURATION_PATTERN)
_UNIT_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration(value: object) -> timedelta | None:
    """`"90s"`, `"1h30m"`, `"2w"`, a number of seconds, or `"forever"` (None)."""
    if value == FOREVER:
        return None
    try:
        if isinstance(value, timedelta) and value >= timedelta(0):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            if math.isfinite(value) and value >= 0:
                return timedelta(seconds=value)
        elif isinstance(value, str) and value and (match := _DURATION.fullmatch(value)):
            parts = [part for part in match.groups()[1:6] if part]
            return timedelta(seconds=sum(float(p[:-1]) * _UNIT_SECONDS[p[-1]] for p in parts))
    except OverflowError:
        pass
    raise ValueError(f"invalid duration {value!r}: use e.g. 30s, 5m, 1h30m, 7d or forever")


def format_duration(value: timedelta | None) -> str:
    """The string form: `"forever"`, `"0s"`, `"1d2h30m"`, `"1.5s"`."""
    if value is None:
        return FOREVER
    rest, text = value // timedelta(microseconds=1), ""
    for unit in "dhm":
        count, rest = divmod(rest, _UNIT_SECONDS[unit] * 1_000_000)
        text += f"{count}{unit}" if count else ""
    seconds, micros = divmod(rest, 1_000_000)
    if seconds or micros or not text:
        text += f"{seconds}" + (f".{micros:06d}".rstrip("0") if micros else "") + "s"
    return text


Duration = Annotated[
    timedelta | None,
    PlainValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
            "minimum": 0,
            "pattern": DURATION_PATTERN,
        }
    ),
]
"""A duration; None means forever."""


def age(seconds: float) -> str:
    """3s, 4m 10s, 2h 5m, 3d 4h: the two largest units (how long ago, how long up)."""
    total = max(math.floor(seconds), 0)
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if total >= size or (unit == "s" and not parts):
            parts.append(f"{total // size}{unit}")
            total %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


def point_in_time(value: str, name: str, now: datetime | None = None) -> datetime:
    """`value` as a time: ISO 8601 with an offset or `Z` (`2026-01-31T12:00Z`), or a duration
    before `now` (`-90m`, `-1h`, `-7d`). InvalidInput names the parameter `name` otherwise."""
    text = value.strip()
    if text.startswith("-"):
        try:
            ago = parse_duration(text[1:])
        except ValueError:
            ago = None
        if ago is not None:
            try:
                return (now or datetime.now(UTC)) - ago
            except OverflowError:
                pass
    else:
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is not None:
            return parsed
        if parsed is not None:
            raise InvalidInput(f"{name}: time {value[:40]!r} needs an offset, e.g. {_EXAMPLE}")
    raise InvalidInput(
        f"{name}: invalid time {value[:40]!r}: use ISO 8601 with an offset, e.g. {_EXAMPLE}, "
        "or a time ago such as -1h or -7d"
    )


_EXAMPLE = "2026-01-31T12:00Z"
