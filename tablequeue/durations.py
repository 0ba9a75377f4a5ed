"""Durations as Queue resources write them: `"90s"`, `"1h30m"`, `"2w"`, a number of seconds,
or `"forever"`; parsed, formatted and described for the CRD's schema."""

from __future__ import annotations

import math
import re
from datetime import timedelta
from typing import Annotated

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema

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
