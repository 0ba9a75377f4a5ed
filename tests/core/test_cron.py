"""Cron ticks in time zones (daylight saving time on purpose), catching up after downtime, the
placeholders of a schedule's message, and the spec's checks of a schedule."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from tablequeue import cron
from tablequeue.errors import SpecError
from tablequeue.spec import QueueResource


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def ticks(expression: str, zone: str, start: datetime, count: int) -> list[datetime]:
    found, at = [], start
    for _ in range(count):
        at = cron.next_tick(expression, zone, at)
        found.append(at)
    return found


def test_a_daily_tick_follows_the_zone_across_a_change_of_offset() -> None:
    # Oslo: UTC+1 in winter, UTC+2 from the last Sunday of March (2026-03-29).
    days = ticks("0 9 * * *", "Europe/Oslo", utc(2026, 3, 27, 12), 3)
    assert days == [utc(2026, 3, 28, 8), utc(2026, 3, 29, 7), utc(2026, 3, 30, 7)]


def test_a_time_in_the_spring_gap_fires_once_the_length_of_the_gap_later() -> None:
    # Berlin 2026-03-29: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist that day.
    days = ticks("30 2 * * *", "Europe/Berlin", utc(2026, 3, 28, 12), 3)
    assert days == [utc(2026, 3, 29, 1, 30), utc(2026, 3, 30, 0, 30), utc(2026, 3, 31, 0, 30)]
    assert days[0].astimezone(cron.time_zone("Europe/Berlin")).hour == 3  # 03:30 CEST


def test_hours_that_collapse_in_the_gap_fire_once() -> None:
    # 02:00 (gone) and 03:00 name the same instant that night: one tick, not two.
    night = ticks("0 2,3 * * *", "Europe/Berlin", utc(2026, 3, 28, 23), 3)
    assert night == [utc(2026, 3, 29, 1), utc(2026, 3, 30, 0), utc(2026, 3, 30, 1)]


def test_a_fixed_time_that_exists_twice_fires_once_at_its_first_occurrence() -> None:
    # Berlin 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
    days = ticks("30 2 * * *", "Europe/Berlin", utc(2026, 10, 24, 12), 3)
    assert days == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30), utc(2026, 10, 27, 1, 30)]


def test_an_hourly_schedule_fires_every_real_hour_through_the_fall_back() -> None:
    hours = ticks("0 * * * *", "Europe/Berlin", utc(2026, 10, 24, 22, 30), 5)
    assert hours == [utc(2026, 10, 24, 23), *(utc(2026, 10, 25, h) for h in range(4))]
    assert len(set(hours)) == 5
    quarter = ticks("*/15 * * * *", "America/New_York", utc(2026, 11, 1, 5, 50), 10)
    assert all(b - a == timedelta(minutes=15) for a, b in itertools.pairwise(quarter))


def test_an_hourly_schedule_skips_no_real_hour_in_spring() -> None:
    hours = ticks("0 * * * *", "America/New_York", utc(2026, 3, 8, 5, 30), 4)
    assert all(b - a == timedelta(hours=1) for a, b in itertools.pairwise(hours))


def test_next_tick_is_strictly_after_and_whole_minutes() -> None:
    at = utc(2026, 5, 1, 10, 0)
    assert cron.next_tick("* * * * *", "UTC", at) == utc(2026, 5, 1, 10, 1)
    assert cron.next_tick("* * * * *", "UTC", at + timedelta(seconds=1)) == utc(2026, 5, 1, 10, 1)
    assert cron.next_tick("@daily", "Asia/Kolkata", at) == utc(2026, 5, 1, 18, 30)


def test_due_ticks_counts_missed_ticks_and_finds_the_latest() -> None:
    now = utc(2026, 5, 1, 12, 0, 30)
    catch_up = cron.due_ticks("*/10 * * * *", "UTC", utc(2026, 5, 1, 11, 0), now)
    assert (catch_up.latest, catch_up.due, catch_up.next) == (
        utc(2026, 5, 1, 12, 0),
        7,
        utc(2026, 5, 1, 12, 10),
    )


def test_due_ticks_after_a_long_downtime_stays_bounded() -> None:
    now = utc(2026, 5, 1, 12, 0, 30)
    catch_up = cron.due_ticks("* * * * *", "UTC", utc(2025, 5, 1), now)  # a year of minutes
    assert catch_up.latest == utc(2026, 5, 1, 12, 0)
    assert catch_up.next == utc(2026, 5, 1, 12, 1)
    assert catch_up.due == cron.MAX_TICKS_WALKED + 1  # a lower bound past the walk
    sparse = cron.due_ticks("0 3 1 1 *", "UTC", utc(2020, 1, 1, 3), now)
    assert (sparse.latest, sparse.due, sparse.next) == (utc(2026, 1, 1, 3), 7, utc(2027, 1, 1, 3))
    busy = cron.due_ticks("* 0-22 * * *", "UTC", utc(2026, 4, 1), utc(2026, 5, 1, 23, 30))
    assert (busy.latest, busy.next) == (utc(2026, 5, 1, 22, 59), utc(2026, 5, 2, 0, 0))


def test_placeholders_render_the_tick_in_the_schedules_zone() -> None:
    tick = utc(2026, 7, 1, 22, 0).astimezone(cron.time_zone("Europe/Oslo"))
    context = cron.TickContext("reports", "nightly", tick)
    body = {
        "at": "{{ tick }}",
        "day": "{{tick:%Y-%m-%d}}",
        "utc": "{{ tickUtc }}",
        "epoch": "{{ tickEpoch }}",
        "who": ["{{ queue }}/{{ schedule }}", 3, None, "{ tick } stays"],
        "{{ tick }}": "keys stay",
    }
    assert cron.render(body, context) == {
        "at": "2026-07-02T00:00:00+02:00",
        "day": "2026-07-02",
        "utc": "2026-07-01T22:00:00Z",
        "epoch": str(int(utc(2026, 7, 1, 22).timestamp())),
        "who": ["reports/nightly", 3, None, "{ tick } stays"],
        "{{ tick }}": "keys stay",
    }
    with pytest.raises(ValueError, match=r"unknown placeholder \{\{ now \}\}"):
        cron.render_text("{{ now }}", context)
    with pytest.raises(ValueError, match="takes no format"):
        cron.render_text("{{ queue:%Y }}", context)


def schedule(**fields: object) -> dict[str, object]:
    return {"name": "nightly", "cron": "0 2 * * *", "message": {}} | fields


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"cron": "0 2 * *"}, r"schedules\.0\.cron: cron expression '0 2 \* \*' has 4 fields"),
        ({"cron": "0 25 * * *"}, r"invalid cron expression '0 25 \* \* \*'"),
        ({"cron": "0 0 30 2 *"}, "never fires"),
        ({"cron": "@often"}, "unknown cron macro '@often'"),
        ({"cron": "* * * * * *"}, "has 6 fields"),
        ({"timeZone": "Europe/Atlantis"}, r"timeZone: unknown time zone 'Europe/Atlantis'"),
        ({"timeZone": "../etc/passwd"}, "unknown time zone"),
        ({"message": {"a": "{{ __import__ }}"}}, "unknown placeholder"),
        ({"messageId": "n-{{ nope }}"}, r"schedule 'nightly': unknown placeholder \{\{ nope \}\}"),
        ({"messageId": "{{ tick:" + "%Y" * 40 + " }}"}, "format of"),
        ({"missed": "CatchUpAll"}, "missed"),
        ({"name": "bad name"}, "name"),
        ({"startingDeadlineSeconds": 0}, "startingDeadlineSeconds"),
    ],
)
def test_a_bad_schedule_is_an_error_naming_the_problem(
    fields: dict[str, object], problem: str
) -> None:
    with pytest.raises(SpecError, match=problem):
        QueueResource.from_name("reports", schedules=[schedule(**fields)])


def test_duplicate_schedule_names_are_an_error() -> None:
    with pytest.raises(SpecError, match=r"duplicate schedule name 'nightly' \(schedules 0 and 2\)"):
        QueueResource.from_name(
            "reports",
            schedules=[schedule(), schedule(name="other"), schedule(cron="@hourly")],
        )


def test_a_valid_schedule_keeps_what_was_written() -> None:
    resource = QueueResource.from_name(
        "reports",
        schedules=[
            schedule(
                cron="  0   2 * * 1-5 ",
                timeZone="America/New_York",
                messageId="nightly-{{ tick:%Y%m%d }}",
                priority=5,
                headers={"source": "{{ schedule }}"},
                missed="Skip",
            )
        ],
    )
    [nightly] = resource.spec.schedules
    assert (nightly.cron, nightly.time_zone, nightly.missed) == (
        "0 2 * * 1-5",
        "America/New_York",
        "Skip",
    )


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe"])
@pytest.mark.parametrize("expression", ["*/20 * * * *", "30 2 * * *", "0 * * * *", "15 1 * * 0"])
def test_the_quick_path_agrees_with_the_walk_all_year(zone: str, expression: str) -> None:
    # About every 22 hours through 2026, and every 30 minutes around each change of offset of
    # the three zones (Lord Howe's is half an hour).
    moments = [utc(2026, 1, 1) + timedelta(minutes=1309 * i) for i in range(400)]
    for day in (utc(2026, 3, 8), utc(2026, 3, 29), utc(2026, 4, 5), utc(2026, 10, 4)):
        moments += [day + timedelta(minutes=30 * i) for i in range(-24, 72)]
    for day in (utc(2026, 10, 25), utc(2026, 11, 1)):
        moments += [day + timedelta(minutes=30 * i) for i in range(-24, 72)]
    tz = cron.time_zone(zone)
    for at in moments:
        assert cron.next_tick(expression, zone, at) == cron.walk_to_next_tick(expression, tz, at), (
            at
        )
