"""The admin UI in a real browser (Debian's Chromium via Playwright), on every engine.

The tests drive the pages the way a person would and then check the database through the core
API. Screenshots of the main pages go to test-output/screenshots/ for a person to look at. The
pages over plain HTTP, without a browser, are tested in test_ui_pages.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tablequeue import Completion, Database, Failure, NewMessage, Queue, connect
from tablequeue.api.auth import COOKIE, Auth
from tablequeue.progress import Progress
from tablequeue.spec import QueueResource
from tests.support.api_server import serve_api

MakeQueue = Callable[..., Queue]

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
EXAMPLE = {"OrderId": "A-1001", "Product": {"Sku": "EXAMPLE", "Qty": 1}}
SKU_123 = 'Product.Sku == "123"'

WRITE_CONTROLS = {
    "queue": [
        "#flow-form",
        "#selection",
        "#select-all",
        "#bulk",
        "#default-status-card",
        "#cancel",
        "#enqueue",
    ],
    "message": ["#actions", "#edit"],
}
"""What a read-only token does not see (and an admin does), by page."""

needs_browser = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's Chromium is not installed at /usr/bin/chromium (apt-get install chromium)",
)


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Module-scoped: Playwright's sync API keeps an event loop running in this thread while it
    lives, and tests of other modules call asyncio.run()."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context; a JavaScript error or console error fails the test.

    Chromium logs every non-2xx fetch ("Failed to load resource"); the API's refusals are part of
    the tests, and the pages show them, so those lines are not problems.
    """
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1366, "height": 900})
    context.set_default_timeout(15_000)
    expect.set_options(timeout=15_000)  # assertions have their own bound (5 s unless told)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on(
        "console",
        lambda message: (
            problems.append(f"console: {message.text}")
            if message.type == "error" and not message.text.startswith("Failed to load resource")
            else None
        ),
    )
    yield page
    context.close()
    assert problems == []


def seed(make_queue: MakeQueue) -> tuple[Queue, dict[str, list[int]]]:
    """30 orders: 5 failed for SKU 123, 2 failed for other SKUs, 5 pending for SKU 123, ..."""
    make_queue("audit-log", category="Ops")
    queue = make_queue("orders", category="Sales", max_attempts=3, example_message=EXAMPLE)
    failing = [0, 3, 6, 9, 12, 1, 4]  # the first five have SKU 123
    queue.enqueue_many(
        [
            NewMessage(
                message={
                    "OrderId": f"A-{1000 + n}",
                    "Product": {"Sku": "123" if n % 3 == 0 else f"9{n:02d}"},
                    "Qty": n % 4 + 1,
                },
                message_id=f"A-{1000 + n}" if n % 2 else None,
                priority=1 if n in failing else 0,
            )
            for n in range(30)
        ]
    )
    leased = queue.lease("worker-1", batch_size=len(failing))
    assert len(leased.messages) == len(failing)
    queue.fail(
        "worker-1",
        [
            Failure(m, f"ValueError: no price for SKU {m.message['Product']['Sku']}", True)
            for m in leased.messages
        ],
    )
    error_ids = sorted(m.id for m in leased.messages)
    sku_123_errors = queue.messages(status="Error", where=SKU_123)
    other_errors = sorted(set(error_ids) - {m.id for m in sku_123_errors})
    held = queue.messages(status="Pending", limit=1, order="desc")[0].id
    queue.set_status("OnHold", ids=[held])
    return queue, {
        "sku_123_errors": [m.id for m in sku_123_errors],
        "other_errors": other_errors,
        "held": [held],
    }


def shot(page: Any, name: str, db_url: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    engine = db_url.split(":", 1)[0].split("+", 1)[0]
    page.screenshot(path=str(SCREENSHOTS / f"{name}-{engine}.png"), full_page=True)


@needs_browser
def test_fix_failed_messages_through_the_ui(
    db_url: str, database: Database, make_queue: MakeQueue, page: Any
) -> None:
    queue, ids = seed(make_queue)
    assert len(ids["sku_123_errors"]) == 5 and len(ids["other_errors"]) == 2
    other = ids["other_errors"][0]
    with serve_api(database) as url:
        _see_the_queues(page, url, db_url)
        _fix_sku_123_in_bulk(page, queue, ids, db_url)
        enqueued_id = _enqueue_the_example(page, url)
        _pause_new_messages(page)
        _hold_one_message(page, url, queue, other, db_url)

    # Every effect, read back through the core.
    for message_id in ids["sku_123_errors"]:
        fixed = queue.get(message_id)
        assert (fixed.status, fixed.attempts) == ("Pending", 0)
    assert queue.count(status="Error", where=SKU_123) == 0
    assert queue.get(ids["other_errors"][1]).status == "Error"
    assert queue.get(other).status == "OnHold"
    assert queue.get(ids["held"][0]).status == "OnHold"
    new = queue.get(enqueued_id)
    assert (new.message, new.message_id, new.priority, new.status) == (
        EXAMPLE,
        "from-the-ui",
        3,
        "Pending",
    )
    assert (new.label, new.app_correlation_id) == ("Made in the UI", None)  # empty: not sent
    assert database.default_status_of("orders") == "Paused"
    assert queue.enqueue({"after": "pause"}).status == "Paused"
    assert database.default_status_of("audit-log") == "Pending"


def _see_the_queues(page: Any, url: str, db_url: str) -> None:
    """The queues, by category, with counts and health."""
    from playwright.sync_api import expect

    page.goto(url + "/")
    expect(page).to_have_url(url + "/ui")
    expect(page.locator("h2")).to_have_text(["Ops", "Sales"])
    orders = page.locator("tr[data-queue=orders]")
    expect(orders.locator(".badge").first).to_have_text("Unhealthy")
    expect(orders).to_contain_text("7 message(s) in Error")
    expect(orders).to_contain_text("OnHold 1")
    shot(page, "queues", db_url)


def _fix_sku_123_in_bulk(page: Any, queue: Queue, ids: dict[str, list[int]], db_url: str) -> None:
    """From the queues page: find the failed messages of SKU 123 (a bad predicate is one line,
    not a crash), then set them Pending in bulk, confirmed with their count first."""
    from playwright.sync_api import expect

    page.locator("tr[data-queue=orders]").locator("a", has_text="orders").click()
    expect(page.locator("h1")).to_have_text("orders")
    expect(page.locator("#messages tbody tr[data-id]")).to_have_count(30)
    page.fill("#filter input[name=where]", "Product.Sku = 123")
    page.click("#filter button")
    expect(page.locator("#filter-error")).to_have_text(
        "invalid predicate at column 13: unexpected '='"
    )
    page.select_option("#filter select[name=status]", "Error")
    page.fill("#filter input[name=where]", SKU_123)
    page.click("#filter button")
    rows = page.locator("#messages tbody tr[data-id]")
    expect(rows).to_have_count(5)
    shown = sorted(int(i) for i in rows.evaluate_all("rows => rows.map(r => r.dataset.id)"))
    assert shown == ids["sku_123_errors"]
    shot(page, "queue", db_url)

    # Bulk: the confirmation says how many before anything changes.
    page.fill("#bulk input[name=to]", "Pending")
    page.click("#bulk button")
    expect(page.locator("#count")).to_have_attribute("data-count", "5")
    expect(page.locator("#apply")).to_have_text("Change 5 messages")
    assert queue.count(status="Error", where=SKU_123) == 5  # nothing changed yet
    shot(page, "confirm", db_url)
    page.click("#apply")
    expect(page.locator("#apply-form .outcome")).to_contain_text("Changed 5 message(s) to Pending.")
    expect(page.locator("#apply")).to_be_disabled()


def _enqueue_the_example(page: Any, url: str) -> int:
    """Enqueue from the prefilled example; the new message's id."""
    from playwright.sync_api import expect

    page.goto(url + "/ui/queues/orders")
    textarea = page.locator("#enqueue textarea")
    assert json.loads(textarea.input_value()) == EXAMPLE
    page.fill("#enqueue input[name=messageId]", "from-the-ui")
    page.fill("#enqueue input[name=priority]", "3")
    page.fill("#enqueue input[name=label]", "Made in the UI")
    page.click("#enqueue button.primary")
    outcome = page.locator("#enqueue .outcome")
    expect(outcome).to_contain_text("inserted, status Pending")
    return int(re.findall(r"#(\d+)", outcome.inner_text())[0])


def _pause_new_messages(page: Any) -> None:
    """The default enqueue status."""
    from playwright.sync_api import expect

    page.fill("#default-status-card input[name=status]", "Paused")
    page.click("#default-status-card button")
    # Held by no message and not built in: refused until the form says it is meant.
    expect(page.locator("#default-status-card .outcome")).to_contain_text(
        "status 'Paused' is not a known status"
    )
    page.check("#default-status-card input[name=newStatus]")
    page.click("#default-status-card button")
    expect(page.locator("#default-status")).to_have_text("Paused")


def _hold_one_message(page: Any, url: str, queue: Queue, other: int, db_url: str) -> None:
    """One message: its error and attempt history, then a new status."""
    from playwright.sync_api import expect

    page.goto(f"{url}/ui/queues/orders/messages/{other}")
    expect(page.locator("#status")).to_have_text("Error")
    expect(page.locator("#last-error")).to_contain_text("ValueError: no price for SKU 9")
    expect(page.locator("#details")).to_contain_text("worker-1")
    # Its attempt history: one failure, by worker-1 in the batch that leased it.
    attempts = page.locator("#attempts tbody tr")
    expect(attempts).to_have_count(1)
    cells = attempts.first.locator("td")
    expect(cells.nth(0)).to_have_text("1")
    expect(cells.nth(1)).to_have_text("failed")
    expect(cells.nth(3)).to_have_text("worker-1")
    expect(cells.nth(4)).to_have_text(queue.get(other).correlation_id or "?")
    expect(cells.nth(5)).to_contain_text("ValueError: no price for SKU 9")
    shot(page, "message", db_url)
    page.click("#actions button[data-status=OnHold]")
    expect(page.locator("#status")).to_have_text("OnHold")


def _processed_then_enqueued_again(queue: Queue) -> int:
    """The id of a message processed as {"v": 1}, then enqueued again as {"v": 2}."""
    queue.enqueue({"v": 1}, message_id="D-1")
    [processed] = queue.lease("w1", 1).messages
    queue.complete("w1", [Completion(processed)])
    queue.enqueue({"v": 2}, message_id="D-1")
    return processed.id


@needs_browser
def test_message_page_edit_cancel_delete(
    db_url: str, database: Database, make_queue: MakeQueue, page: Any
) -> None:
    from playwright.sync_api import expect

    queue = make_queue("orders")
    first = queue.enqueue({"Sku": "bad", "Note": "<b>not bold</b>"}, message_id="A-1")
    second = queue.enqueue({"n": 2})
    assert first.id is not None and second.id is not None
    queue.report_progress(first.id, {"rows": 5})  # free JSON: no bar
    queue.report_progress(second.id, Progress(step=3, steps=10, text="copying files"))
    enqueued_again = _processed_then_enqueued_again(
        make_queue("documents", keep_processed_for="1d")
    )
    with serve_api(database) as url:
        # Its page shows the version processed (issue 50).
        page.goto(f"{url}/ui/queues/documents/messages/{enqueued_again}")
        expect(page.locator("#body")).to_contain_text('"v": 2')
        expect(page.locator("#previous")).to_contain_text('"v": 1')
        page.goto(f"{url}/ui/queues/orders/messages/{first.id}")
        expect(page.locator("#previous")).to_have_count(0)  # never processed: none kept
        expect(page.locator("#body")).to_contain_text('"Note": "<b>not bold</b>"')
        assert page.locator("#body b").count() == 0  # shown as text, never as markup
        expect(page.locator("#progress-region")).to_contain_text('"rows": 5')
        expect(page.locator("#progress-bar")).to_have_count(0)

        # A body that is not JSON is refused in the page; nothing is sent.
        page.fill("#edit textarea", "{not json")
        page.click("#edit button.primary")
        expect(page.locator("#edit .outcome")).to_contain_text("message is not valid JSON")
        page.fill("#edit textarea", '{"Sku": "good"}')
        page.click("#edit button.primary")
        expect(page.locator("#body")).to_contain_text('"Sku": "good"')

        # A status the API refuses shows the API's one-line error.
        page.fill("#custom-status input[name=status]", "Leased")
        page.click("#custom-status button")
        expect(page.locator("#custom-status .outcome")).to_contain_text(
            "status 'Leased' is set only by leasing"
        )

        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#cancel button")
        expect(page.locator("#status")).to_have_text("Cancelled")
        expect(page.locator("#cancel")).to_have_count(0)

        page.goto(f"{url}/ui/queues/orders/messages/{second.id}")
        bar = page.locator("#progress-bar")
        expect(bar).to_contain_text("3 of 10 · 30% · copying files")
        expect(bar.locator("progress")).to_have_attribute("value", "30.0")
        queue.report_progress(second.id, Progress(step=4, steps=10, text="copying files"))
        expect(bar).to_contain_text("4 of 10 · 40%")  # live: no reload
        page.once("dialog", lambda dialog: dialog.dismiss())
        page.click("#delete button")
        expect(page).to_have_url(f"{url}/ui/queues/orders/messages/{second.id}")
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#delete button")
        expect(page).to_have_url(f"{url}/ui/queues/orders")
        expect(page.locator("#messages tbody tr[data-id]")).to_have_count(1)

    edited = queue.get(first.id or 0)
    assert (edited.message, edited.status, edited.version) == ({"Sku": "good"}, "Cancelled", 2)
    assert [m.id for m in queue.messages()] == [first.id]


@needs_browser
def test_sign_in_with_a_token(sqlite_url: str, page: Any) -> None:
    from playwright.sync_api import expect

    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("orders"))
        message = database.queue("orders").enqueue({"n": 1})
        auth = Auth(admin_token="admin-secret", read_token="read-secret")
        with serve_api(database, auth) as url:
            page.goto(url + "/ui/queues/orders?status=Pending")
            expect(page).to_have_url(re.compile(r"/ui/login\?next="))
            expect(page.locator("text=Sign out")).to_have_count(0)  # not signed in yet
            expect(page.locator("#find")).to_have_count(0)
            page.fill("input[name=token]", "wrong")
            page.click("button.primary")
            expect(page.locator(".alert.error")).to_have_text("That token is not valid here.")

            # The read-only token may look but not change.
            page.fill("input[name=token]", "read-secret")
            page.click("button.primary")
            expect(page).to_have_url(url + "/ui/queues/orders?status=Pending")
            [cookie] = page.context.cookies()
            assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == (
                COOKIE,
                True,
                "Strict",
            )
            # No write control is offered to it (and the server refuses the writes anyway).
            for control in WRITE_CONTROLS["queue"]:
                expect(page.locator(control)).to_have_count(0)
            expect(page.locator("#messages tbody tr[data-id]")).to_have_count(1)
            refused = page.evaluate(
                "fetch('/queues/orders/default-status', {method: 'PUT',"
                " headers: {'Content-Type': 'application/json'},"
                " body: JSON.stringify({status: 'Paused'})}).then(r => r.status)"
            )
            assert refused == 403
            assert database.default_status_of("orders") == "Pending"
            page.goto(f"{url}/ui/queues/orders/messages/{message.id}")
            expect(page.locator("#status")).to_have_text("Pending")
            for control in WRITE_CONTROLS["message"]:
                expect(page.locator(control)).to_have_count(0)

            page.click("text=Sign out")
            expect(page).to_have_url(url + "/ui/login")
            page.fill("input[name=token]", "admin-secret")
            page.click("button.primary")
            expect(page).to_have_url(url + "/ui")
            page.goto(f"{url}/ui/queues/orders/messages/{message.id}")
            for control in WRITE_CONTROLS["message"]:
                expect(page.locator(control)).to_have_count(1)
            page.goto(url + "/ui/queues/orders")
            for control in WRITE_CONTROLS["queue"]:
                expect(page.locator(control)).to_have_count(1)
            page.fill("#default-status-card input[name=status]", "Paused")
            page.check("#default-status-card input[name=newStatus]")
            page.click("#default-status-card button")
            expect(page.locator("#default-status")).to_have_text("Paused")
            assert database.default_status_of("orders") == "Paused"


@needs_browser
def test_pause_and_resume_a_queue_from_its_page(
    db_url: str, database: Database, make_queue: MakeQueue, page: Any
) -> None:
    from playwright.sync_api import expect

    queue = make_queue("orders", rate_limit={"messagesPerSecond": 2.5, "burst": 10})
    queue.enqueue_many([NewMessage(message={"n": n}) for n in range(3)])
    with serve_api(database) as url:
        page.goto(f"{url}/ui/queues/orders")
        expect(page.locator("#flow-state")).to_have_text("Running")
        expect(page.locator("#rate-limit")).to_have_text("2.5/s, burst 10")

        page.once("dialog", lambda dialog: dialog.dismiss())  # asked first: nothing changes
        page.click("#pause-button")
        expect(page.locator("#pause-button")).to_be_visible()
        assert not database.flow_state("orders").paused

        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#pause-button")
        expect(page.locator("#flow-state")).to_have_text("Paused")
        expect(page.locator("#resume-button")).to_be_visible()
        assert database.flow_state("orders").paused
        assert queue.lease("w1", 10).messages == []
        shot(page, "queue-paused", db_url)
        page.goto(f"{url}/ui")
        expect(page.locator("tr[data-queue=orders] .paused")).to_have_text("Paused")
        page.locator("tr[data-queue=orders] a", has_text="orders").click()

        page.click("#resume-button")
        expect(page.locator("#flow-state")).to_have_text("Running")
        expect(page.locator("#pause-button")).to_be_visible()
    assert not database.flow_state("orders").paused
    assert len(queue.lease("w1", 10).messages) == 3


@needs_browser
def test_queue_list_grouped_by_database_and_pages_stay_in_theirs(
    sqlite_url: str, tmp_path: Path, page: Any
) -> None:
    """Two SQLite databases with a queue `orders` each, and one that cannot be opened: the list
    shows each database with its engine, the broken one with its error; a queue page of the
    second database changes that database only; the overview's chart by queue names both."""
    from playwright.sync_api import expect

    with (
        connect(sqlite_url) as main,
        connect(f"sqlite:///{tmp_path / 'archive.db'}") as archive,
        connect(f"sqlite:///{tmp_path / 'no-such-folder' / 'gone.db'}") as gone,
    ):
        main.apply(QueueResource.from_name("orders", category="Shop"))
        archive.apply(QueueResource.from_name("orders", category="Old orders"))
        archive.queue("orders").enqueue({"kept": True})
        with serve_api({"default": main, "archive": archive, "gone": gone}) as url:
            page.goto(f"{url}/ui")
            titles = page.locator(".database-title")
            expect(titles).to_have_text(["default sqlite", "archive sqlite", "gone sqlite"])
            in_archive = page.locator(".database[data-database=archive]")
            expect(in_archive.locator("section h2")).to_have_text(["Old orders"])
            expect(page.locator(".database[data-database=default] section h2")).to_have_text(
                ["Shop"]
            )
            expect(page.locator(".database[data-database=gone] .unreachable")).to_have_text(
                "Unreachable: database unavailable"
            )

            in_archive.locator("tr[data-queue=orders] a", has_text="orders").click()
            expect(page).to_have_url(re.compile(r"/ui/queues/orders\?database=archive$"))
            expect(page.locator("td.body")).to_have_count(1)
            page.once("dialog", lambda dialog: dialog.accept())
            page.click("#pause-button")
            expect(page.locator("#flow-state")).to_have_text("Paused")
            assert archive.flow_state("orders").paused
            assert not main.flow_state("orders").paused

            page.goto(f"{url}/ui/charts")
            legend = page.locator("#chart-by-queue .u-legend")
            expect(legend).to_contain_text("orders")
            expect(legend).to_contain_text("archive/orders")
