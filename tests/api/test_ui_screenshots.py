"""Screenshots of the admin UI for the documentation, light and dark, in a real browser (Debian's
Chromium via Playwright) on SQLite with a day's worth of realistic data.

Each page goes to test-output/screenshots/docs/<page>-<theme>.png at 1280x800;
`scripts/update-screenshots` runs this module and copies them into docs/images/ (the docs site
and the README show them). The test also checks what each picture is meant to show.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tablequeue import Completion, Database, Failure, NewMessage, connect
from tablequeue.api.auth import Auth
from tests.api.test_charts import seed_hour
from tests.api.test_ui_browser import browser, needs_browser
from tests.api.test_ui_live_browser import clipped_cells
from tests.api.test_ui_workers_browser import beat
from tests.support.api_server import serve_api

__all__ = ["browser"]  # the browser fixture, used here too
OUT = Path(__file__).resolve().parents[2] / "test-output" / "screenshots" / "docs"
PAGES = ["queues", "queue", "message", "charts", "workers", "sign-in"]
THEMES = ["light", "dark"]
TRACEBACK = """Traceback (most recent call last):
  File "/app/shop/mail.py", line 42, in send_confirmation
    smtp.send_message(build(order))
  File "/usr/lib/python3.12/smtplib.py", line 986, in send_message
    raise SMTPRecipientsRefused(senderrs)
smtplib.SMTPRecipientsRefused: {'{email}': (550, b'5.1.1 mailbox unavailable')}"""


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Database]:
    """A relative SQLite URL: the footer shows `sqlite:///shop.db`, not a temporary folder."""
    monkeypatch.chdir(tmp_path)
    with connect("sqlite:///shop.db") as database:
        yield database


def seed_shop(database: Database, make_queue: Any) -> int:
    """Four queues of a shop in three categories, workers, an hour of charts; the id of a
    message that failed three times."""
    confirmations = make_queue(
        "send-order-confirmation",
        category="Orders",
        max_attempts=3,
        retry={"delaySeconds": 0, "jitter": 0},
        keep_processed_for="7d",
        example_message={"OrderId": "A-2001", "Email": "ann@example.com"},
    )
    inventory = make_queue("sync-inventory", category="Orders", max_attempts=5)
    audit = make_queue("audit-log", category="Ops")
    invoices = make_queue("export-invoices", category="Finance")
    people = ["ann", "bob", "eve", "kim", "lee", "max", "noa", "ola", "raj", "sam"]
    confirmations.enqueue_many(
        [
            NewMessage(
                message={
                    "OrderId": f"A-{2001 + n}",
                    "Email": f"{people[n % 10]}@example.com",
                    "Lines": [{"Sku": f"SKU-{100 + n % 7}", "Qty": n % 3 + 1}],
                    "Total": round(19.9 + n * 7.35, 2),
                },
                message_id=f"A-{2001 + n}",
                priority=1 if n % 9 == 4 else 0,  # four that fail, taken first
            )
            for n in range(36)
        ]
    )
    mailer = "send-order-confirmation-7f9c-q8w1z"
    for _ in range(3):  # retried at once (delay 0), then Error
        doomed = confirmations.lease(mailer, 4).messages
        errors = [TRACEBACK.replace("{email}", m.message["Email"]) for m in doomed]
        confirmations.fail(mailer, [Failure(m, e) for m, e in zip(doomed, errors, strict=True)])
    done = confirmations.lease(mailer, 20).messages
    confirmations.complete(mailer, [Completion(m) for m in done[:16]])
    inventory.enqueue_many(
        [NewMessage(message={"Sku": f"SKU-{100 + n}", "Warehouse": "BER-1"}) for n in range(9)]
    )
    inventory.enqueue_many(
        [
            NewMessage(message={"Sku": f"SKU-{200 + n}", "Warehouse": "AMS-2"}, after=900)
            for n in range(5)
        ]
    )
    audit.enqueue_many([NewMessage(message={"Event": "login", "User": p}) for p in people])
    invoices.enqueue_many(
        [
            NewMessage(message={"Month": "2026-10", "Customer": f"C-{n}"}, status="OnHold")
            for n in range(3)
        ]
    )
    for worker, queue, in_flight, processed in (
        ("send-order-confirmation-7f9c-x2k4p", "send-order-confirmation", 3, 1520),
        ("send-order-confirmation-7f9c-q8w1z", "send-order-confirmation", 0, 1498),
        ("sync-inventory-5d2b-r6t9y", "sync-inventory", 1, 312),
        ("audit-log-66c1-m3n7d", "audit-log", 0, 87),
    ):
        beat(database, worker, queue, in_flight, processed)
    seed_hour(database, confirmations)
    seed_hour(database, inventory, scale=2)
    return doomed[0].id or 0


@needs_browser
def test_screenshots_for_the_docs(database: Database, make_queue: Any, browser: Any) -> None:
    from playwright.sync_api import expect

    failed_id = seed_shop(database, make_queue)
    OUT.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(15_000)
    page = context.new_page()
    taken: list[Path] = []

    def take(name: str, theme: str) -> None:
        assert page.evaluate("document.documentElement.dataset.theme") == theme
        path = OUT / f"{name}-{theme}.png"
        page.screenshot(path=str(path))
        taken.append(path)

    try:
        with serve_api(database) as url:
            for theme in THEMES:
                page.emulate_media(color_scheme=theme)
                page.goto(url + "/ui")
                expect(page.locator("table.queues")).to_have_count(3)
                assert clipped_cells(page) == []
                take("queues", theme)
                page.goto(url + "/ui/queues/send-order-confirmation?status=Error")
                expect(page.locator("#messages tbody tr[data-id]")).to_have_count(4)
                page.locator("#messages tbody input[data-select]").nth(1).check()
                take("queue", theme)
                page.goto(f"{url}/ui/queues/send-order-confirmation/messages/{failed_id}")
                expect(page.locator("#attempts tbody tr")).to_have_count(3)
                take("message", theme)
                page.goto(url + "/ui/charts")
                expect(page.locator("#charts")).to_have_attribute("data-loaded", re.compile(".+"))
                take("charts", theme)
                page.goto(url + "/ui/workers")
                expect(page.locator("#workers tbody tr[data-worker]")).to_have_count(4)
                take("workers", theme)
        with serve_api(database, Auth(admin_token="a-secret")) as url:
            for theme in THEMES:
                page.emulate_media(color_scheme=theme)
                page.goto(url + "/ui/queues/send-order-confirmation")
                expect(page.locator("input[name=token]")).to_be_visible()
                take("sign-in", theme)
    finally:
        context.close()
    assert sorted(p.name for p in taken) == sorted(f"{n}-{t}.png" for n in PAGES for t in THEMES)
    for path in taken:
        assert path.stat().st_size < 150_000, f"{path.name} is {path.stat().st_size} bytes"
