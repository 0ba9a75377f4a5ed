"""Poll interval guidance (NServiceBus: 100 ms to 10 s, never longer than a message's time to be
received): a Queue whose workers poll more often or less often, or less often than its default
expiry, applies, with a QueueSpecWarning that names the setting; one inside the range
applies without a warning."""

from __future__ import annotations

import warnings

import pytest

from tablequeue import connect
from tablequeue.errors import QueueSpecWarning
from tablequeue.spec import QueueResource, QueueSpec


def _spec(min_seconds: float, max_seconds: float) -> QueueSpec:
    poll = {"minSeconds": min_seconds, "maxSeconds": max_seconds}
    return QueueSpec.model_validate({"workers": {"pollInterval": poll}})


@pytest.mark.parametrize(
    ("min_seconds", "max_seconds", "named"),
    [
        (0.1, 10, []),
        (0.1, 5, []),
        (0.05, 5, ["minSeconds 0.05 is below 0.1 s"]),
        (0.1, 30, ["maxSeconds 30 is above 10 s"]),
        (0.01, 60, ["minSeconds 0.01 is below 0.1 s", "maxSeconds 60 is above 10 s"]),
    ],
)
def test_poll_intervals_outside_the_guidance_are_named(
    min_seconds: float, max_seconds: float, named: list[str]
) -> None:
    found = _spec(min_seconds, max_seconds).warnings()
    assert len(found) == len(named)
    for text, words in zip(found, named, strict=True):
        assert words in text


@pytest.mark.parametrize(
    ("expire_after", "max_seconds", "warned"),
    [("forever", 5, False), ("5s", 5, False), ("4s", 5, True), ("1m", 10, False), ("1s", 2, True)],
)
def test_a_poll_interval_longer_than_the_default_expiry_is_named(
    expire_after: str, max_seconds: float, warned: bool
) -> None:
    spec = QueueSpec.model_validate(
        {"expireAfter": expire_after, "workers": {"pollInterval": {"maxSeconds": max_seconds}}}
    )
    expected = f"maxSeconds {max_seconds:g} is longer than expireAfter {expire_after}"
    assert [expected in text for text in spec.warnings()] == ([True] if warned else [])


@pytest.mark.parametrize("expire_after", ["0s", 0, "-1s", "soon"])
def test_an_expiry_that_is_no_duration_or_zero_is_refused(expire_after: object) -> None:
    with pytest.raises(ValueError, match="expireAfter"):
        QueueSpec.model_validate({"expireAfter": expire_after})


def test_the_default_spec_has_no_warning() -> None:
    assert QueueSpec().warnings() == []


def test_apply_warns_and_still_applies(sqlite_url: str) -> None:
    slow = QueueResource.model_validate(
        {
            "metadata": {"name": "slow"},
            "spec": {"workers": {"pollInterval": {"minSeconds": 1, "maxSeconds": 60}}},
        }
    )
    with connect(sqlite_url) as db, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert db.apply(slow) == "created"
        assert db.apply(QueueResource.from_name("quick")) == "created"
        assert db.queue("slow").spec.workers.poll_interval.max_seconds == 60
    [warning] = [w for w in caught if issubclass(w.category, QueueSpecWarning)]
    assert str(warning.message).startswith("queue slow: workers.pollInterval.maxSeconds 60")
    assert warning.filename == __file__  # points at the caller's apply
