"""Charts of the past: the `/charts` JSON routes, and the chart pages in a real browser
(Debian's Chromium via Playwright) drawing with the vendored uPlot. The rollup is seeded through
the core's upsert (the statement workers run; tests/worker/test_rollup.py has real workers
write it). Screenshots go to test-output/screenshots/ for a person to look at."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from typing import Any

from tablequeue import Database, Queue
from tablequeue.rollup import MinuteCounts, minute_of, rollup_table, write_minutes
from tablequeue.rollup.table import ADDED_UP, LARGEST, LATEST
from tests.support.api_server import api_client, serve_api

from .test_ui_browser import (  # noqa: F401 (fixtures)
    MakeQueue,
    browser,
    needs_browser,
    page,
    shot,
)


def seed_hour(database: Database, queue: Queue, scale: int = 1) -> tuple[datetime, int]:
    """An hour of rows as workers write them: a wave of traffic, latency and backlog. The
    current minute and the total processed."""
    clock = write_minutes(database, queue.name, queue.table, {})
    now = minute_of(clock)
    rollup = rollup_table(database.metadata)
    total = 0
    with database.transaction() as connection:
        for k in range(1, 59):  # inside the last hour even if the clock turns a minute meanwhile
            minute = now - timedelta(minutes=k)
            wave = 1 + math.sin(k / 6)
            counts = MinuteCounts(processed=int(40 * wave * scale), failed=int(k % 7 == 0))
            for n in range(counts.processed):
                counts.observe(0.02 * wave + 0.5 * (n % 10 == 0) + 5.0 * (n % 50 == 0))
            counts.sampled(10_000 - k * 45 * scale)
            total += counts.processed
            row = counts.row(queue.name, minute, int(300 * (1.2 + math.cos(k / 9)) * scale))
            connection.execute(
                database.dialect.accumulate(
                    rollup, row, add=ADDED_UP, largest=LARGEST, latest=LATEST
                )
            )
    return now, total


def test_chart_routes(database: Database, make_queue: MakeQueue) -> None:
    orders = make_queue("orders")
    make_queue("audit-log")
    now, total = seed_hour(database, orders)
    with api_client(database) as client:
        one = client.get("/queues/orders/charts", params={"window": "1h"})
        assert one.status_code == 200, one.text
        body: dict[str, Any] = one.json()
        assert (body["queue"], body["window"], body["stepSeconds"]) == ("orders", "1h", 60)
        assert len(body["time"]) == 60
        step = body["time"].index(int(now.timestamp()))  # the last, or the one before it
        assert step >= 58
        for name in ("enqueued", "processed", "failed", "latencyP50", "latencyP99", "backlog"):
            assert len(body[name]) == 60, name
        assert sum(body["processed"]) == total
        assert body["enqueued"][step - 1] == 45  # the highest id moved by 45 a minute
        assert body["backlog"][step - 1] is not None and body["latencyP99"][step - 1] is not None

        every = client.get("/charts", params={"window": "24h"}).json()
        assert [q["queue"] for q in every["queues"]] == ["audit-log", "orders"]
        assert len(every["time"]) == 288 and every["stepSeconds"] == 300
        assert sum(every["total"]["processed"]) == total
        assert sum(every["queues"][0]["processed"]) == 0

        bad = client.get("/charts", params={"window": "2h"})
        assert bad.status_code == 422 and "error" in bad.json()
        missing = client.get("/queues/nope/charts")
        assert missing.status_code == 404 and "does not exist" in missing.json()["error"]


def _drawn(tab: Any, name: str) -> dict[str, Any]:
    """What uPlot holds for a chart: its data columns and series labels."""
    drawn: dict[str, Any] = tab.evaluate(
        """name => {
            const chart = window.tqCharts[name];
            return {data: chart.data, labels: chart.series.map(s => s.label),
                    width: chart.width, paths: chart.series.slice(1).map(s => s.show)};
        }""",
        name,
    )
    return drawn


@needs_browser
def test_chart_pages_draw_the_series(
    db_url: str,
    database: Database,
    make_queue: MakeQueue,
    page: Any,  # noqa: F811
) -> None:
    from playwright.sync_api import expect

    orders = make_queue("orders")
    mail = make_queue("send-mail")
    _, total = seed_hour(database, orders)
    seed_hour(database, mail, scale=2)
    with serve_api(database) as url:
        page.goto(url + "/ui/queues/orders")
        page.click("#charts-link")
        expect(page.locator("#charts")).to_have_attribute("data-loaded", re.compile(".+"))
        throughput = _drawn(page, "throughput")
        assert throughput["labels"][1:] == ["enqueued", "processed", "failed"]
        assert [len(column) for column in throughput["data"]] == [60] * 4
        assert sum(throughput["data"][2]) == total
        latency = _drawn(page, "latency")
        assert latency["labels"][1:] == ["p50", "p90", "p99"]
        assert len(latency["data"][0]) == 60
        with_successes = sum(1 for n in throughput["data"][2] if n)
        assert sum(v is not None for v in latency["data"][3]) == with_successes
        backlog = _drawn(page, "backlog")
        assert sum(v is not None for v in backlog["data"][1]) == 59  # 58 seeded, the current
        assert page.locator("#chart-throughput canvas").count() == 1
        shot(page, "charts-queue", db_url)

        page.goto(url + "/ui/charts?window=24h")
        expect(page.locator("#charts")).to_have_attribute("data-loaded", re.compile(".+"))
        by_queue = _drawn(page, "byQueue")
        assert by_queue["labels"][1:] == ["orders", "send-mail"]
        assert [len(column) for column in by_queue["data"]] == [288] * 3
        assert sum(by_queue["data"][1]) == total
        assert len(_drawn(page, "throughput")["data"][0]) == 288
        shot(page, "charts-all", db_url)
