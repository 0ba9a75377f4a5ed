"""Schedules over real HTTP on every engine: the list, running one now, the queue page section,
and who may do what."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

import httpx
import pytest

from tablequeue import Database, Queue
from tablequeue.api.auth import Auth
from tests.support.api_server import api_client

MakeQueue = Callable[..., Queue]
NIGHTLY = {
    "name": "nightly",
    "cron": "0 2 * * *",
    "timeZone": "America/New_York",
    "message": {"report": "{{ tick:%Y-%m-%d }}"},
    "missed": "Skip",
}


@pytest.fixture
def reports(make_queue: MakeQueue) -> Queue:
    return make_queue("reports", schedules=[NIGHTLY], keep_processed_for="forever")


@pytest.fixture
def client(database: Database, reports: Queue) -> Iterator[httpx.Client]:
    with api_client(database) as client:
        yield client


def test_the_schedules_of_a_queue_and_running_one_now(client: httpx.Client, reports: Queue) -> None:
    [shown] = client.get("/queues/reports/schedules").json()
    next_tick = datetime.fromisoformat(shown.pop("nextTick"))
    assert shown == {
        "name": "nightly",
        "cron": "0 2 * * *",
        "timeZone": "America/New_York",
        "missed": "Skip",
        "suspend": False,
        "messageId": None,
        "topic": None,
        "lastTick": None,
        "lastFiredAt": None,
        "lastMessage": None,
        "fired": 0,
        "skipped": 0,
    }
    assert next_tick == reports.schedules()[0].next_tick

    ran = client.post("/queues/reports/schedules/nightly/run")
    assert ran.status_code == 200, ran.text
    result = ran.json()
    [message] = reports.messages()
    assert result["message"] == message.id and result["schedule"] == "nightly"
    assert (result["topic"], result["deliveries"]) == (None, [])
    [shown] = client.get("/queues/reports/schedules").json()
    assert shown["fired"] == 1 and shown["lastMessage"] == message.id
    assert datetime.fromisoformat(shown["nextTick"]) == next_tick  # running now keeps it
    assert datetime.fromisoformat(shown["lastTick"]) == datetime.fromisoformat(result["tick"])


def test_running_a_schedule_with_a_topic_answers_its_deliveries(
    client: httpx.Client, make_queue: MakeQueue
) -> None:
    subscriber = make_queue("mail", subscriptions=[{"topic": "ticks"}])
    make_queue("clock", schedules=[NIGHTLY | {"topic": "ticks"}])
    ran = client.post("/queues/clock/schedules/nightly/run")
    assert ran.status_code == 200, ran.text
    [message] = subscriber.messages()
    assert ran.json()["topic"] == "ticks" and ran.json()["message"] is None
    assert ran.json()["deliveries"] == [{"queue": "mail", "outcome": "inserted", "id": message.id}]


def test_unknown_schedules_and_queues_are_404(client: httpx.Client) -> None:
    missing = client.post("/queues/reports/schedules/weekly/run")
    assert missing.status_code == 404
    assert "queue 'reports' has no schedule 'weekly'" in missing.json()["error"]
    assert client.get("/queues/nope/schedules").status_code == 404
    assert client.post("/queues/nope/schedules/nightly/run").status_code == 404


def test_the_queue_page_shows_the_schedules(client: httpx.Client, reports: Queue) -> None:
    page = client.get("/ui/queues/reports").text
    assert 'id="schedules"' in page and 'data-schedule="nightly"' in page
    assert "America/New_York" in page and "<code>0 2 * * *</code>" in page
    assert 'data-action="/queues/reports/schedules/nightly/run"' in page
    reports.run_schedule("nightly")
    [message] = reports.messages()
    assert (
        f'href="/ui/queues/reports/messages/{message.id}"' in client.get("/ui/queues/reports").text
    )


def test_readers_see_schedules_and_only_admins_run_them(database: Database, reports: Queue) -> None:
    auth = Auth(admin_token="admin-secret", read_token="read-secret")
    read = {"Authorization": "Bearer read-secret"}
    admin = {"Authorization": "Bearer admin-secret"}
    with api_client(database, auth) as client:
        assert client.get("/queues/reports/schedules").status_code == 401
        assert client.get("/queues/reports/schedules", headers=read).status_code == 200
        run = "/queues/reports/schedules/nightly/run"
        assert client.post(run, headers=read).status_code == 403
        assert reports.count() == 0
        assert client.post(run, headers=admin).status_code == 200
    assert reports.count() == 1
