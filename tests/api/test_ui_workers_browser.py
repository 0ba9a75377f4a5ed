"""The admin UI's workers pages in a real browser (Debian's Chromium via Playwright), on every
engine: every worker of every queue with stale ones marked, and a queue's own workers on its
page. Screenshots go to test-output/screenshots/workers-<engine>.png."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from tablequeue import Database, Queue
from tablequeue.models import Heartbeat
from tests.api.test_ui_browser import browser, needs_browser, page, shot
from tests.support.api_server import serve_api

__all__ = ["browser", "page"]  # fixtures of the browser tests, used here too
MakeQueue = Callable[..., Queue]


def beat(database: Database, worker_id: str, queue: str, in_flight: int, processed: int) -> None:
    database.heartbeat(
        Heartbeat(
            worker_id,
            queue,
            worker_id.rsplit("-", 1)[0],
            41,
            "0.1.0",
            5.0,
            in_flight,
            processed,
            processed // 10,
        )
    )


@needs_browser
def test_workers_page_marks_stale_workers(
    db_url: str, database: Database, make_queue: MakeQueue, page: Any
) -> None:
    from playwright.sync_api import expect

    make_queue("send-order-confirmation", category="Orders")
    make_queue("audit-log", category="Ops")
    beat(database, "send-order-confirmation-7f9c-x2k4p", "send-order-confirmation", 3, 1520)
    beat(database, "send-order-confirmation-7f9c-q8w1z", "send-order-confirmation", 4, 1498)
    beat(database, "send-order-confirmation-7f9c-m3n7d", "send-order-confirmation", 0, 233)
    beat(database, "audit-log-5d2b-r6t9y", "audit-log", 1, 87)
    table = database.workers_table
    with database.transaction() as connection:  # killed 2 minutes ago: stale
        connection.execute(
            sa.update(table)
            .where(table.c.worker_id == "send-order-confirmation-7f9c-m3n7d")
            .values(last_seen=database.dialect.seconds_from_now(sa.literal(-120.0)))
        )
    with serve_api(database) as url:
        page.goto(url + "/ui")
        page.click("header nav a:text('Workers')")
        expect(page.locator("h1")).to_have_text("Workers")
        rows = page.locator("#workers tbody tr[data-worker]")
        expect(rows).to_have_count(4)
        expect(page.locator("#live-count")).to_have_text("3 live")
        expect(page.locator("#stale-count")).to_have_text("1 stale")
        stale = page.locator("tr[data-worker='send-order-confirmation-7f9c-m3n7d']")
        expect(stale.locator(".badge")).to_have_text("stale")
        expect(stale).to_contain_text(re.compile(r"2m( \d+s)? ago"))
        live = page.locator("tr[data-worker='send-order-confirmation-7f9c-x2k4p']")
        expect(live.locator(".badge")).to_have_text("live")
        expect(live).to_contain_text("1520")
        shot(page, "workers", db_url)

        # A queue's page lists its own workers; the count links to them.
        page.click("#workers a:text('audit-log')")
        expect(page.locator("h1")).to_have_text("audit-log")
        expect(page.locator("#worker-count")).to_have_text("1 live")
        expect(page.locator("#queue-workers tbody tr[data-worker]")).to_have_count(1)
        page.goto(url + "/ui/queues/send-order-confirmation")
        expect(page.locator("#worker-count")).to_have_text("2 live, 1 stale")
        expect(page.locator("#queue-workers tr[data-state=stale]")).to_have_count(1)
        shot(page, "queue-workers", db_url)
