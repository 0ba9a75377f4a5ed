"""Errors in the admin UI, in a real browser: the exception line first wherever an error is
shown (the queue's list, the message's last error, its Attempts), the traceback folded below it.
The errors are tracebacks as Python prints them, recorded through the core."""

from __future__ import annotations

import traceback
from typing import Any

from tablequeue import Database, Failure
from tests.support.api_server import serve_api

from .test_ui_browser import MakeQueue, browser, needs_browser, page, shot  # noqa: F401 (fixtures)

LONG = "bad sku " + "9" * 150


def _traceback_of(error: Exception) -> str:
    def price(sku: str) -> None:
        raise error

    try:
        price("123")
    except Exception as raised:
        return "".join(traceback.format_exception(raised))
    raise AssertionError("unreachable")


@needs_browser
def test_errors_show_their_exception_line_first(
    db_url: str,
    database: Database,
    make_queue: MakeQueue,
    page: Any,  # noqa: F811
) -> None:
    from playwright.sync_api import expect

    queue = make_queue("orders", max_attempts=2, retry={"delay_seconds": 0})
    enqueued = [queue.enqueue({"n": n}).id for n in (1, 2)]
    assert None not in enqueued
    failing, long_one = (int(message_id or 0) for message_id in enqueued)
    for error in (ValueError("bad sku 123"), KeyError("price")):  # two attempts, then Error
        leased = queue.lease("worker-1", batch_size=2).messages
        queue.fail(
            "worker-1", [Failure(m, _traceback_of(error)) for m in leased if m.id == failing]
        )
        queue.fail(
            "worker-1",
            [Failure(m, _traceback_of(ValueError(LONG))) for m in leased if m.id == long_one],
        )
    assert queue.get(failing).status == queue.get(long_one).status == "Error"
    queue.enqueue({"n": 3})  # pending, never failed: no error

    with serve_api(database) as url:
        page.goto(f"{url}/ui/queues/orders?status=Error")
        headers = page.locator("#messages thead th")
        expect(headers.last).to_have_text("Last error")
        row = page.locator(f"#messages tr[data-id='{failing}'] td.last-error")
        expect(row).to_have_text("KeyError: 'price'")
        assert (row.get_attribute("title") or "").startswith("Traceback (most recent call last):")
        clipped = page.locator(f"#messages tr[data-id='{long_one}'] td.last-error")
        expect(clipped).to_have_text(("ValueError: " + LONG)[:99] + "…")
        assert ("ValueError: " + LONG) in (clipped.get_attribute("title") or "")
        shot(page, "queue-errors", db_url)

        page.goto(f"{url}/ui/queues/orders?status=Pending")  # never failed: no error
        expect(page.locator("#messages tbody tr")).to_have_count(1)
        expect(page.locator("#messages tbody td.last-error")).to_have_text("")

        page.goto(f"{url}/ui/queues/orders/messages/{failing}")
        expect(page.locator("#last-error")).to_have_text("KeyError: 'price'")
        attempts = page.locator("#attempts tbody tr td.attempt-error")
        expect(attempts).to_have_count(2)
        first = attempts.nth(0)
        expect(first.locator(".exception-line")).to_have_text("ValueError: bad sku 123")
        folded = first.locator("details pre")
        expect(folded).to_be_hidden()  # the traceback, collapsed under the exception line
        first.locator("details summary").click()
        expect(folded).to_be_visible()
        expect(folded).to_contain_text("in price")
        expect(attempts.nth(1).locator(".exception-line")).to_have_text("KeyError: 'price'")
        shot(page, "message-attempts", db_url)
