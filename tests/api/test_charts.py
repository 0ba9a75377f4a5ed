"""Charts of the past: the `/charts` JSON routes, and the chart pages in a real browser
(Debian's Chromium via Playwright) drawing with the vendored uPlot. The rollup is seeded through
the core's upsert (the statement workers run; tests/worker/test_rollup.py has real workers
write it). Screenshots go to test-output/screenshots/ for a person to look at."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from tablequeue import Database, Queue, connect
from tablequeue.rollup import MinuteCounts, minute_of, rollup_table, write_minutes
from tablequeue.rollup.table import ADDED_UP, LARGEST, LATEST
from tablequeue.spec import QueueResource
from tests.support.api_server import api_client, serve_api

from .test_ui_browser import (  # noqa: F401 (fixtures)
    MakeQueue,
    browser,
    needs_browser,
    page,
    shot,
)


def seed_hour(
    database: Database, queue: Queue, scale: int = 1, existed_for: int = 120
) -> tuple[datetime, int]:
    """Rows as workers write them, for the last hour or the `existed_for` minutes the queue has
    existed (its registry row says so): a wave of traffic, latency and backlog, as many enqueued
    as processed. The current minute and the total processed."""
    clock = write_minutes(database, queue.name, queue.table, {})
    now = minute_of(clock)
    rollup = rollup_table(database.metadata)
    registry = database.registry
    total = 0
    with database.transaction() as connection:
        connection.execute(
            sa.update(registry)
            .where(registry.c.name == queue.name)
            .values(created_at=now - timedelta(minutes=existed_for))
        )
        for k in range(1, min(59, existed_for)):  # in the last hour if the clock turns meanwhile
            minute = now - timedelta(minutes=k)
            wave = 1 + math.sin(k / 6)
            counts = MinuteCounts(processed=int(40 * wave * scale), failed=int(k % 7 == 0))
            counts.enqueued = counts.processed
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


def _measured(series: list[Any]) -> Any:
    return sum(value for value in series if value is not None)


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
        assert _measured(body["processed"]) == total
        # As many enqueued as processed (seeded so), 0 in the minutes nobody wrote: the queue
        # existed and nothing was created then.
        assert body["enqueued"] == [p or 0 for p in body["processed"]]
        # A minute nobody wrote: the window's first (the one before the seeded hour), or its
        # last when the clock turned a minute between the seeding and the request.
        unwritten = 0 if step == 59 else 59
        assert body["processed"][unwritten] is None and body["enqueued"][unwritten] == 0
        assert body["backlog"][step - 1] is not None and body["latencyP99"][step - 1] is not None

        every = client.get("/charts", params={"window": "24h"}).json()
        assert [q["queue"] for q in every["queues"]] == ["audit-log", "orders"]
        assert len(every["time"]) == 288 and every["stepSeconds"] == 300
        assert _measured(every["total"]["processed"]) == total
        audit_log = every["queues"][0]
        assert audit_log["processed"][:-1] == [None] * 287  # no worker wrote: a gap
        assert audit_log["enqueued"][:-1] == [None] * 287  # made now: nothing before

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
        assert _measured(throughput["data"][2]) == total
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
        assert _measured(by_queue["data"][1]) == total
        assert len(_drawn(page, "throughput")["data"][0]) == 288
        shot(page, "charts-all", db_url)


def _seed_minutes(database: Database, queue: Queue, existed_for: int, backlog: int) -> None:
    """A queue made `existed_for` minutes ago, one success a minute since (latency from 5 ms
    to 50 s) and a flat backlog."""
    clock = write_minutes(database, queue.name, queue.table, {})
    now = minute_of(clock)
    registry = database.registry
    with database.transaction() as connection:
        connection.execute(
            sa.update(registry)
            .where(registry.c.name == queue.name)
            .values(created_at=now - timedelta(minutes=existed_for))
        )
    minutes = {}
    for k in range(1, existed_for):
        counts = MinuteCounts(processed=1, enqueued=1)
        counts.observe(0.005 * 10 ** (k % 5))
        minutes[now - timedelta(minutes=k)] = counts
    write_minutes(database, queue.name, queue.table, minutes, backlog=backlog)
    rollup = rollup_table(database.metadata)
    with database.transaction() as connection:
        connection.execute(
            sa.update(rollup).where(rollup.c.queue == queue.name).values(backlog=backlog)
        )


def _axis_labels(tab: Any, name: str) -> list[str]:
    labels: list[str] = tab.evaluate("name => window.tqCharts[name].axes[1]._values", name)
    return labels


DECADES = {"1 ms", "10 ms", "100 ms", "1 s", "10 s", "100 s", "17 min", "167 min", "28 h"}


@needs_browser
def test_chart_axes_gaps_and_theme(sqlite_url: str, page: Any) -> None:  # noqa: F811
    from playwright.sync_api import expect

    with connect(sqlite_url) as database:
        for name, backlog in (("orders", 1), ("bulk", 2345)):
            database.apply(QueueResource.from_name(name))
            _seed_minutes(database, database.queue(name), existed_for=20, backlog=backlog)
        with serve_api(database) as url:
            page.goto(url + "/ui/queues/orders/charts")
            expect(page.locator("#charts")).to_have_attribute("data-loaded", re.compile(".+"))
            # A flat backlog of 1: whole-number ticks only, each once.
            counts = [label for label in _axis_labels(page, "backlog") if label]
            assert counts == ["0", "1"], counts
            # The log latency axis labels its powers of ten, and nothing else.
            latency = _axis_labels(page, "latency")
            assert len([label for label in latency if label]) >= 3, latency
            assert set(latency) - {""} <= DECADES, latency
            # Before the queue existed: gaps (null), not zeros.
            throughput = _drawn(page, "throughput")
            enqueued, processed = throughput["data"][1], throughput["data"][2]
            first = next(i for i, n in enumerate(enqueued) if n is not None)
            assert 38 <= first <= 41 and set(processed[:first]) == {None}
            assert enqueued[first:-1].count(1) >= 18
            shot(page, "charts-small", sqlite_url)

            # Colours come from the page's CSS custom properties, again on a theme change.
            stroke = "name => window.tqCharts[name].series[2]._stroke"
            assert page.evaluate(stroke, "throughput") == "#16a34a"
            page.evaluate(
                """() => {
                    const root = document.documentElement;
                    root.style.setProperty("--chart-series-2", "rgb(255, 0, 0)");
                    document.dispatchEvent(new Event("tablequeue:themechange"));
                }"""
            )
            assert page.evaluate(stroke, "throughput") == "rgb(255, 0, 0)"

            page.goto(url + "/ui/queues/bulk/charts")
            expect(page.locator("#charts")).to_have_attribute("data-loaded", re.compile(".+"))
            labels = [label for label in _axis_labels(page, "backlog") if label]
            assert "0" in labels and all(re.fullmatch(r"\d+(\.\d)?k|0", label) for label in labels)
            assert any(label.endswith("k") for label in labels), labels
