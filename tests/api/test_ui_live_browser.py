"""The admin UI following the database, and working on chosen rows, in a real browser (Debian's
Chromium via Playwright), on SQLite: live refresh and its pause toggle, per-row retry, cancel and
delete and the audit page that records them, the find box, the colour theme and the queue list
in a narrow window.

The SQL under these pages is the core's, tested on every engine in
tests/core/conformance/test_selected_messages.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tablequeue import Database, Failure, NewMessage, Queue, connect
from tests.api.test_ui_browser import browser, needs_browser, page
from tests.api.test_ui_workers_browser import beat
from tests.support.api_server import serve_api

__all__ = ["browser", "page"]  # fixtures of the browser tests, used here too
MakeQueue = Callable[..., Queue]
LIGHT_BACKGROUND = "rgb(246, 247, 249)"
DARK_BACKGROUND = "rgb(18, 21, 28)"


@pytest.fixture
def database(sqlite_url: str) -> Iterator[Database]:
    """SQLite only: these pages add no SQL of their own (see the module's docstring)."""
    with connect(sqlite_url) as database:
        yield database


def row_ids(page: Any) -> list[int]:
    ids = page.locator("#messages tbody tr[data-id]").evaluate_all(
        "rows => rows.map(r => Number(r.dataset.id))"
    )
    return list(ids)


def clipped_cells(page: Any) -> list[str]:
    """The text of the queue list's shown cells that do not show all of it."""
    clipped = page.locator("table.queues th, table.queues td").evaluate_all(
        "cells => cells.filter(c => c.offsetParent && c.scrollWidth > c.clientWidth)"
        ".map(c => c.textContent.trim())"
    )
    return list(clipped)


def wait_for_ticks(page: Any, ticks: int) -> None:
    """Until the live timer has ticked `ticks` more times (paused or not)."""
    start = int(page.evaluate("Number(document.body.dataset.liveTicks || 0)"))
    page.wait_for_function(
        "n => Number(document.body.dataset.liveTicks || 0) >= n", arg=start + ticks
    )


@needs_browser
def test_pages_follow_the_database_until_paused(
    database: Database, make_queue: MakeQueue, page: Any
) -> None:
    from playwright.sync_api import expect

    orders = make_queue("orders", category="Sales")
    audit = make_queue("audit-log", category="Ops")
    first = orders.enqueue({"n": 1})
    with serve_api(database) as url:
        # The queue list: counts follow.
        page.goto(url + "/ui")
        audit_row = page.locator("tr[data-queue=audit-log]")
        expect(audit_row.locator("td.num").first).to_have_text("0")
        audit.enqueue({"n": 1})
        expect(audit_row.locator("td.num").first).to_have_text("1")

        # A queue's messages: a new one appears; a ticked row stays ticked; typing is kept.
        page.goto(url + "/ui/queues/orders")
        expect(page.locator("#live-toggle")).to_have_text("Live")
        page.check(f"input[data-select][value='{first.id}']")
        page.fill("#filter input[name=where]", "n == 2")
        second = orders.enqueue({"n": 2})
        expect(page.locator(f"tr[data-id='{second.id}']")).to_be_visible()
        assert row_ids(page) == [second.id, first.id]
        expect(page.locator("#status-chips")).to_contain_text("Pending 2")
        expect(page.locator(f"input[data-select][value='{first.id}']")).to_be_checked()
        expect(page.locator("#selected-count")).to_have_text("1 selected")
        expect(page.locator("#filter input[name=where]")).to_have_value("n == 2")

        # Paused (and still paused after a reload): nothing new shows.
        page.click("#live-toggle")
        expect(page.locator("#live-toggle")).to_have_text("Live: paused")
        page.reload()
        expect(page.locator("#live-toggle")).to_have_text("Live: paused")
        third = orders.enqueue({"n": 3})
        wait_for_ticks(page, 2)  # a whole tick after the enqueue: it would have shown
        assert row_ids(page) == [second.id, first.id]
        page.click("#live-toggle")
        expect(page.locator(f"tr[data-id='{third.id}']")).to_be_visible()

        # A message's page follows its status; the workers page its workers.
        page.goto(f"{url}/ui/queues/orders/messages/{first.id}")
        expect(page.locator("#status")).to_have_text("Pending")
        orders.set_status("Error", ids=[first.id or 0])
        expect(page.locator("#status")).to_have_text("Error")
        expect(page.locator("#status")).to_have_class(re.compile(r"\bstatus-error\b"))
        expect(page.locator("#details")).to_contain_text("Updated")
        page.goto(url + "/ui/workers")
        expect(page.locator("#workers tbody tr[data-worker]")).to_have_count(0)
        beat(database, "orders-7f9c-x2k4p", "orders", 2, 40)
        expect(page.locator("#workers tbody tr[data-worker]")).to_have_count(1)
        expect(page.locator("#live-count")).to_have_text("1 live")


@needs_browser
def test_retry_cancel_and_delete_ticked_rows(
    database: Database, make_queue: MakeQueue, page: Any
) -> None:
    from playwright.sync_api import expect

    orders = make_queue("orders", max_attempts=1)
    ids = [m.id or 0 for m in orders.enqueue_many([NewMessage(message={"n": n}) for n in range(6)])]
    failed = orders.lease("w1", 2).messages
    orders.fail("w1", [Failure(m, "ValueError: no price", True) for m in failed])
    [leased] = orders.lease("w1", 1).messages
    with serve_api(database) as url:
        page.goto(url + "/ui/queues/orders")
        expect(page.locator("#selection button").first).to_be_disabled()

        # Retry the two in Error: Pending again, attempts from 0.
        for message in failed:
            page.check(f"input[data-select][value='{message.id}']")
        expect(page.locator("#selected-count")).to_have_text("2 selected")
        page.click("#retry-selected button")
        expect(page.locator("#selected-count")).to_have_text("0 selected")  # reloaded
        for message in failed:
            assert (orders.get(message.id).status, orders.get(message.id).attempts) == (
                "Pending",
                0,
            )

        # Cancel one, confirmed first.
        page.check(f"input[data-select][value='{ids[5]}']")
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#cancel-selected button")
        expect(page.locator(f"tr[data-id='{ids[5]}'] .badge")).to_have_text("Cancelled")

        # Delete every row of the page: asked first (declined: nothing), the leased one stays.
        page.check("#select-all")
        expect(page.locator("#selected-count")).to_have_text("6 selected")
        messages: list[str] = []

        def decline(dialog: Any) -> None:
            messages.append(dialog.message)
            dialog.dismiss()

        page.once("dialog", decline)
        page.click("#delete-selected button")
        expect(page.locator("#messages tbody tr[data-id]")).to_have_count(6)
        assert messages == ["Delete the 6 ticked message(s)? This cannot be undone."]
        assert orders.count() == 6
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#delete-selected button")
        expect(page.locator("#messages tbody tr[data-id]")).to_have_count(1)

        # The audit page: the three changes, newest first, made via the UI; the declined
        # delete is not there.
        page.click("nav >> text=Audit")
        actions = page.locator("#audit tbody tr[data-action]")
        expect(actions).to_have_count(3)
        assert actions.evaluate_all("rows => rows.map(r => r.dataset.action)") == [
            "delete",
            "cancel",
            "set-status",
        ]
        texts = actions.all_inner_texts()
        assert all("\tui\t" in text for text in texts), texts
        assert 'status: "Pending"' in texts[2] and "orders" in texts[2]
    assert [(m.id, m.status) for m in orders.messages()] == [(leased.id, "Leased")]


@needs_browser
def test_find_a_message_from_the_header(
    database: Database, make_queue: MakeQueue, page: Any
) -> None:
    from playwright.sync_api import expect

    orders, invoices = make_queue("orders"), make_queue("invoices")
    in_orders = orders.enqueue({"n": 1}, message_id="A-7")
    invoices.enqueue({"n": 2}, message_id="A-7")
    with serve_api(database) as url:
        page.goto(url + "/ui/workers")  # on every page, not only the queues
        page.fill("#find input[name=key]", "A-7")
        page.press("#find input[name=key]", "Enter")
        expect(page.locator("#found tbody tr")).to_have_count(2)
        expect(page.locator("#found-count")).to_contain_text("2 messages")
        page.fill("#find input[name=key]", str(in_orders.tracking_id))
        page.press("#find input[name=key]", "Enter")
        expect(page).to_have_url(f"{url}/ui/queues/orders/messages/{in_orders.id}")
        page.fill("#find input[name=key]", "A-404")
        page.press("#find input[name=key]", "Enter")
        expect(page.locator("#found-none")).to_contain_text("No message in any queue")

        # By the caller's correlation id: every message sharing it, labelled, in any queue.
        shipped = orders.enqueue({"n": 3}, correlation_id="checkout-9", label="Order A-9")
        invoices.enqueue({"n": 4}, correlation_id="checkout-9", label="Invoice A-9")
        orders.enqueue({"n": 5}, correlation_id="checkout-10")
        page.fill("#find input[name=key]", "checkout-9")
        page.press("#find input[name=key]", "Enter")
        expect(page.locator("#found tbody tr")).to_have_count(2)
        by_queue_name = ["Invoice A-9", "Order A-9"]
        expect(page.locator("#found .label")).to_have_text(by_queue_name)
        expect(page.locator("#found .correlation")).to_have_text(["checkout-9"] * 2)
        page.click(f"#found tr[data-queue=orders] a[href$='/messages/{shipped.id}']")
        expect(page.locator("h1 #label")).to_have_text("Order A-9")
        expect(page.locator("#correlation-id")).to_have_text("checkout-9")
        page.goto(url + "/ui/queues/orders")  # the list names the row by its label
        row = page.locator(f"#messages tr[data-id='{shipped.id}'] .name")
        expect(row.locator(".label")).to_have_text("Order A-9")
        row.locator(".correlation").click()  # lists every message sharing it
        expect(page.locator("#found tbody tr")).to_have_count(2)


@needs_browser
def test_dark_theme_and_the_queue_list_in_a_narrow_window(
    database: Database, make_queue: MakeQueue, browser: Any
) -> None:
    from playwright.sync_api import expect

    make_queue("send-order-confirmation-to-customers", category="Orders")
    make_queue("audit-log", category="Ops").enqueue({"n": 1})
    context = browser.new_context(viewport={"width": 800, "height": 900}, color_scheme="dark")
    context.set_default_timeout(15_000)
    page = context.new_page()
    background = "getComputedStyle(document.body).backgroundColor"
    try:
        with serve_api(database) as url:
            page.goto(url + "/ui")
            assert page.evaluate(background) == DARK_BACKGROUND  # the system's choice
            expect(page.locator("#theme-choice")).to_have_value("system")
            page.evaluate(
                "window.themeChanges = 0;"
                "document.addEventListener('tablequeue:themechange', () => window.themeChanges++)"
            )
            page.select_option("#theme-choice", "light")
            assert page.evaluate(background) == LIGHT_BACKGROUND
            assert page.evaluate("window.themeChanges") == 1
            _queue_list_fits(page)
            page.reload()
            assert page.evaluate(background) == LIGHT_BACKGROUND  # remembered
            page.select_option("#theme-choice", "system")
            assert page.evaluate(background) == DARK_BACKGROUND
    finally:
        context.close()


def _queue_list_fits(page: Any) -> None:
    """At 800 px the queue list keeps Backlog and Health in view, and its category tables
    line their columns up."""
    headers = page.locator("table.queues").first.locator("th")
    visible = [h.inner_text().strip().lower() for h in headers.all() if h.is_visible()]
    assert "backlog" in visible and "health" in visible
    for row in page.locator("table.queues tbody tr").all():
        for cell in (row.locator("td").nth(0), row.locator("td.health")):
            box = cell.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 800
    assert clipped_cells(page) == []
    lefts = [
        [round(box["x"]) for th in table.locator("th").all() if (box := th.bounding_box())]
        for table in page.locator("table.queues").all()
    ]
    assert len(lefts) == 2 and lefts[0] == lefts[1]
