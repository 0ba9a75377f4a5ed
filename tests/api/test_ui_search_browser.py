"""The queue page's search fields in a real browser (Debian's Chromium via Playwright): typed
with the keyboard, kept in the URL (a link reproduces the search, paging keeps it), a bad time
shown as one line naming its field, and the bulk change not offered for a search it cannot
repeat. The filters themselves hold on every engine (tests/core/conformance/test_search.py);
SQLite is enough here."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tablequeue import Failure, NewMessage, connect
from tablequeue.spec import QueueResource
from tests.api.test_ui_browser import browser, needs_browser, page, shot
from tests.support.api_server import serve_api

__all__ = ["browser", "page"]  # fixtures of the browser tests, used here too


@needs_browser
def test_search_by_error_text_and_time_from_the_filter_bar(sqlite_url: str, page: Any) -> None:
    from playwright.sync_api import expect

    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("orders"))
        queue = database.queue("orders")
        queue.enqueue_many([NewMessage(message={"n": n}) for n in range(70)])
        leased = queue.lease("w1", 70).messages
        queue.fail(
            "w1",
            [
                Failure(m, f"TimeoutError: gateway_{m.id} 100% busy" if m.id % 10 else "KeyError")
                for m in leased
            ],
        )
        timeouts = sorted((m.id for m in leased if m.id % 10), reverse=True)
        assert len(timeouts) == 63

        with serve_api(database) as url:
            page.goto(f"{url}/ui/queues/orders")
            page.focus("#filter input[name=where]")
            page.keyboard.press("Tab")
            expect(page.locator("#error-contains")).to_be_focused()
            page.keyboard.type("100% BUSY")
            page.keyboard.press("Tab")
            expect(page.locator("#createdAfter")).to_be_focused()
            page.keyboard.type("-1h")
            page.keyboard.press("Enter")

            expect(page).to_have_url(re.compile(r"errorContains=100%25\+BUSY"))
            query = parse_qs(urlsplit(page.url).query)
            assert query["errorContains"] == ["100% BUSY"] and query["createdAfter"] == ["-1h"]
            rows = page.locator("#messages tbody tr[data-id]")
            expect(rows).to_have_count(50)
            assert _ids(rows) == timeouts[:50]
            expect(page.locator("#bulk-searched")).to_be_visible()
            shot(page, "queue-search", sqlite_url)

            page.click("a[rel=next]")
            expect(rows).to_have_count(13)
            assert _ids(rows) == timeouts[50:]
            expect(page.locator("#error-contains")).to_have_value("100% BUSY")
            expect(page.locator("#createdAfter")).to_have_value("-1h")

            page.goto(f"{url}/ui/queues/orders?errorContains=keyerror&createdBefore=-1h")
            expect(page.locator("#messages tbody td.empty")).to_have_text(
                "No messages match this filter."
            )
            page.fill("#createdBefore", "2026-01-31 12:00")
            page.keyboard.press("Enter")
            expect(page.locator("#filter-error")).to_contain_text("createdBefore: ")
            expect(page.locator("#filter-error")).to_contain_text("needs an offset")

            page.fill("#createdBefore", "")
            page.keyboard.press("Enter")
            expect(rows).to_have_count(7)
            page.click("#clear-filter")
            expect(page.locator("#error-contains")).to_have_value("")
            expect(rows).to_have_count(50)


def _ids(rows: Any) -> list[int]:
    return [int(i) for i in rows.evaluate_all("rows => rows.map(r => r.dataset.id)")]
