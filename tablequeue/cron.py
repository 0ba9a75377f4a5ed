"""Recurring messages' time and text: cron expressions in a time zone, their ticks (with daylight
saving time handled on purpose), and the placeholders a schedule's message may hold.

Ticks are computed on the wall clock of the schedule's zone with croniter, then turned into UTC
instants:
- a wall time that does not exist that day (spring forward) fires the length of the gap later
  (02:30 in a gap of one hour fires at 03:30), once, even when another wall time of the
  expression maps to the same instant;
- a wall time that exists twice (fall back) fires once, at its first occurrence, unless the
  expression runs every hour (hour field `*`): then it fires in both, so an hourly or
  every-15-minutes schedule never pauses for an hour.

Placeholders are `{{ name }}` or `{{ name:FORMAT }}` (a strftime format) in any string of the
message body, the header values and the messageId pattern; nothing is evaluated, a placeholder is
only replaced by its text, and an unknown one is an error when the spec is validated.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter

MACROS: Final = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
FIELDS_HELP: Final = "5 fields: minute hour day-of-month month day-of-week, e.g. '0 2 * * *'"
MAX_TICKS_WALKED: Final = 500
"""Ticks counted one by one when catching up after downtime; past it the count is a lower
bound (it only informs: every policy enqueues at most one message for them)."""
_WINDOW = timedelta(hours=3)
"""More than any UTC offset change: wall times this far apart keep their order as instants."""
_STEADY = timedelta(days=7)


def cron_expression(value: str) -> str:
    """A valid 5-field cron expression (or a macro such as @daily), else ValueError naming why."""
    text = " ".join(value.split())
    if not text:
        raise ValueError(f"empty cron expression: use {FIELDS_HELP}")
    if text.startswith("@"):
        if text.lower() not in MACROS:
            raise ValueError(f"unknown cron macro {value!r}: use one of {', '.join(MACROS)}")
    elif len(text.split(" ")) != 5:
        raise ValueError(
            f"cron expression {value!r} has {len(text.split(' '))} fields: use {FIELDS_HELP}"
        )
    try:
        _parsed(text)
    except (CroniterError, ValueError, KeyError, IndexError) as error:
        raise ValueError(f"invalid cron expression {value!r}: {error}") from None
    return text


def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone of this name, else ValueError naming it."""
    try:
        return _zone(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"unknown time zone {name!r}: use an IANA name such as UTC, Europe/Oslo or "
            "America/New_York"
        ) from None


@lru_cache(maxsize=256)
def _zone(name: str) -> ZoneInfo:
    if not name or name != name.strip():
        raise ValueError(name)
    return ZoneInfo(name)


@lru_cache(maxsize=256)
def _parsed(expression: str) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(field) for field in croniter(expression).expanded)


def _every_hour(expression: str) -> bool:
    hours = _parsed(expression)[1]
    return hours == ("*",) or len(hours) == 24


def _steady(zone: ZoneInfo, start: datetime, end: datetime) -> bool:
    """True when `zone` keeps one UTC offset from `start` to `end` (at most _STEADY apart: no
    zone changes its offset twice within that)."""
    offsets = {
        moment.astimezone(zone).utcoffset() for moment in (start, start + (end - start) / 2, end)
    }
    return len(offsets) == 1


def _instants(wall: datetime, zone: ZoneInfo, both_folds: bool) -> Iterator[datetime]:
    """The UTC instants a wall time of `zone` names: one, or two when it exists twice."""
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    yield first
    if both_folds:
        second = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
        if second != first and second.astimezone(zone).replace(tzinfo=None) == wall:
            yield second


def next_tick(expression: str, zone_name: str, after: datetime) -> datetime:
    """The first tick strictly after `after` (aware), as an aware UTC datetime."""
    zone = time_zone(zone_name)
    after = after.astimezone(UTC)
    wall = after.astimezone(zone).replace(tzinfo=None)
    # The common case: no change of offset anywhere near; the wall clock's next tick is it.
    candidate: datetime = croniter(expression, wall).get_next(datetime)
    instant: datetime = candidate.replace(tzinfo=zone).astimezone(UTC)
    if instant - after < _STEADY and _steady(zone, after - _WINDOW, instant + _WINDOW):
        return instant
    return walk_to_next_tick(expression, zone, after)


def walk_to_next_tick(expression: str, zone: ZoneInfo, after: datetime) -> datetime:
    """`next_tick` the long way, right around changes of offset: every wall-clock tick from
    before `after` to well past the first one that follows it, each as its UTC instants."""
    wall = after.astimezone(zone).replace(tzinfo=None)
    walls = croniter(expression, wall - _WINDOW)
    both_folds = _every_hour(expression)
    best: datetime | None = None
    best_wall = wall
    while True:
        candidate: datetime = walls.get_next(datetime)
        if best is not None and candidate > best_wall + _WINDOW:
            return best
        for instant in _instants(candidate, zone, both_folds):
            if instant > after and (best is None or instant < best):
                best, best_wall = instant, candidate


@dataclass(frozen=True)
class CatchUp:
    """The ticks due at `now`: the latest one, how many were due (a lower bound past
    MAX_TICKS_WALKED) and the first tick after `now`."""

    latest: datetime
    due: int
    next: datetime


def due_ticks(expression: str, zone_name: str, first_due: datetime, now: datetime) -> CatchUp:
    """The ticks from `first_due` (<= now) to now: counted one by one up to MAX_TICKS_WALKED,
    past that the latest is found looking back from now (an hour, a day, ... at a time)."""
    latest, due = first_due, 1
    following = next_tick(expression, zone_name, latest)
    while following <= now and due < MAX_TICKS_WALKED:
        latest, due = following, due + 1
        following = next_tick(expression, zone_name, latest)
    if following <= now:
        due += 1
        span = timedelta(hours=1)
        while (tick := next_tick(expression, zone_name, max(now - span, latest))) > now:
            span *= 24  # reaches back to `latest` at last, whose following tick is due
        latest, following = tick, next_tick(expression, zone_name, tick)
        while following <= now:
            latest, following = following, next_tick(expression, zone_name, following)
    return CatchUp(latest, due, following)


# --- placeholders ---------------------------------------------------------------------------

PLACEHOLDERS: Final = {
    "tick": "the tick in the schedule's time zone, ISO 8601 with its offset",
    "tickUtc": "the tick in UTC, ISO 8601 with Z",
    "tickEpoch": "the tick as whole seconds since 1970-01-01 UTC",
    "schedule": "the schedule's name",
    "queue": "the queue's name",
}
_PLACEHOLDER = re.compile(r"\{\{\s*+([^{}:\s]*+)\s*+(?::([^{}]*+))?\}\}")
"""Possessive throughout, so matching is linear: the lazy form with a `\\s*` on each side of the
name backtracked cubically over whitespace (a 1,600-character string took seconds)."""
MAX_FORMAT_LENGTH: Final = 64


@dataclass(frozen=True)
class TickContext:
    queue: str
    schedule: str
    tick: datetime
    """The tick in the schedule's time zone."""

    def value(self, name: str, fmt: str | None) -> str:
        tick = self.tick if name == "tick" else self.tick.astimezone(UTC)
        if fmt is not None:
            if name not in ("tick", "tickUtc"):
                raise ValueError(f"placeholder {{{{ {name} }}}} takes no format")
            return tick.strftime(fmt)
        if name == "tick":
            return tick.isoformat()
        if name == "tickUtc":
            return tick.isoformat().replace("+00:00", "Z")
        if name == "tickEpoch":
            return str(int(tick.timestamp()))
        return self.queue if name == "queue" else self.schedule


def render_text(text: str, context: TickContext) -> str:
    """`text` with its placeholders replaced; ValueError for an unknown one or a bad format."""

    def replace(match: re.Match[str]) -> str:
        name, fmt = match.group(1), match.group(2)
        fmt = None if fmt is None else fmt.rstrip()
        if name not in PLACEHOLDERS:
            raise ValueError(f"unknown placeholder {{{{ {name} }}}}: use {', '.join(PLACEHOLDERS)}")
        if fmt is not None and len(fmt) > MAX_FORMAT_LENGTH:
            raise ValueError(f"format of {{{{ {name} }}}} longer than {MAX_FORMAT_LENGTH}")
        return context.value(name, fmt)

    return _PLACEHOLDER.sub(replace, text)


def render(value: Any, context: TickContext) -> Any:
    """A JSON value with the placeholders of its strings (not its keys) replaced."""
    if isinstance(value, str):
        return render_text(value, context)
    if isinstance(value, dict):
        return {key: render(item, context) for key, item in value.items()}
    if isinstance(value, list):
        return [render(item, context) for item in value]
    return value


SAMPLE_TICK: Final = datetime(2026, 12, 31, 23, 59, tzinfo=UTC)
"""The tick specs are checked with (placeholders and the length of rendered identities)."""
