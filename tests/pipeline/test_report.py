"""The report's figures against the same figures computed in SQL on the same data, the same
figures again once part of the data moved to the archive, and the chart and its time axis."""

from __future__ import annotations

import itertools
import json
import shutil
import statistics
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import matplotlib.dates as mdates
import matplotlib.image
import matplotlib.pyplot as plt
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from pyspark.sql import SparkSession

from tablequeue import Completion, Failure, NewMessage, Queue, connect
from tablequeue.pipeline.archive import PARTITIONS, archive_queue
from tablequeue.pipeline.chart import chart_figure, draw_chart
from tablequeue.pipeline.cli import pipeline
from tablequeue.pipeline.report import Report, build_report, messages_frame
from tablequeue.spec import QueueResource

from .history import fill_history

pytestmark = [pytest.mark.spark, pytest.mark.slow]

QUEUES = {"emails": 1200, "orders": 2000}
CHART_COPY = Path("/tmp/tablequeue-pipeline-report.png")
START_KEYS = ("dueToStartSeconds", "enqueueToStartSeconds", "startToFinishSeconds")
LATENCY_KEYS = ("latencySeconds", "timeInQueueSeconds", *START_KEYS)
FINISHED = ("Processed", "Error", "Abandoned", "Cancelled", "Expired")


def sql_figures(queue: Queue) -> dict[str, Any]:
    """The report's figures for one queue, computed by PostgreSQL."""
    t = queue.table

    def seconds(later: Any, earlier: Any) -> Any:
        return sa.extract("epoch", later - earlier)

    latencies = {
        "latencySeconds": seconds(t.c.processed_at, t.c.process_after),
        "timeInQueueSeconds": seconds(t.c.processed_at, t.c.created_at),
        "dueToStartSeconds": seconds(t.c.started_at, t.c.process_after),
        "enqueueToStartSeconds": seconds(t.c.started_at, t.c.created_at),
        "startToFinishSeconds": seconds(t.c.processed_at, t.c.started_at),
    }
    finished_at = sa.func.coalesce(t.c.processed_at, t.c.updated_at)
    finished = t.c.status.in_(FINISHED)
    with queue.storage.transaction() as connection:

        def percentiles(value: Any) -> dict[str, float]:
            row = connection.execute(
                sa.select(
                    *[sa.func.percentile_cont(p).within_group(value) for p in (0.5, 0.9, 0.99)]
                ).where(t.c.status == "Processed")
            ).one()
            return {"p50": float(row[0]), "p90": float(row[1]), "p99": float(row[2])}

        counts: dict[str, int] = dict(
            connection.execute(sa.select(t.c.status, sa.func.count()).group_by(t.c.status)).all()
        )
        hour = sa.func.date_trunc("hour", sa.func.timezone("UTC", finished_at))
        hourly = connection.execute(
            sa.select(
                hour,
                sa.func.count(),
                sa.func.count().filter(t.c.status == "Error"),
            )
            .where(finished)
            .group_by(hour)
            .order_by(hour)
        ).all()
        first_line = sa.func.trim(sa.func.split_part(t.c.last_error, "\n", 1))
        texts: dict[str, int] = dict(
            connection.execute(
                sa.select(first_line, sa.func.count())
                .where(t.c.status == "Error")
                .group_by(first_line)
            ).all()
        )
        return {
            "counts": counts,
            **{key: percentiles(value) for key, value in latencies.items()},
            "hourly": [(h.strftime("%Y-%m-%dT%H"), n, e) for h, n, e in hourly],
            "texts": texts,
        }


def check_against_sql(report: Report, queues: dict[str, Queue]) -> None:
    for name, queue in queues.items():
        expected = sql_figures(queue)
        figures = report.queues[name]
        assert figures["counts"] == expected["counts"]
        finished = sum(n for s, n in expected["counts"].items() if s != "Pending")
        assert figures["finished"] == finished
        assert figures["errors"] == expected["counts"]["Error"]
        assert figures["errorRate"] == pytest.approx(expected["counts"]["Error"] / finished)
        for key in LATENCY_KEYS:
            assert figures[key] == pytest.approx(expected[key], abs=1e-6), key
        hourly = [
            (entry["hour"][:13], entry["finished"], entry["errors"])
            for entry in report.throughput
            if entry["queue"] == name
        ]
        assert hourly == expected["hourly"]
        texts = {e["error"]: e["count"] for e in report.error_texts if e["queue"] == name}
        assert texts == expected["texts"]


def test_report_matches_sql_before_and_after_archiving(
    spark: SparkSession, postgres_url: str, tmp_path: Path
) -> None:
    database = connect(postgres_url)
    for name in QUEUES:
        database.apply(QueueResource.from_name(name))
    queues = {name: database.queue(name) for name in QUEUES}
    for name, count in QUEUES.items():
        fill_history(queues[name], count)
    before = build_report(messages_frame(spark, postgres_url, list(QUEUES), None))
    check_against_sql(before, queues)
    assert len({entry["hour"] for entry in before.throughput}) > 6

    root = tmp_path / "archive"
    archived = archive_queue(spark, postgres_url, "orders", str(root), timedelta(days=1))
    assert archived.deleted > 0
    after = build_report(messages_frame(spark, postgres_url, list(QUEUES), str(root)))
    assert after.queues == before.queues
    assert after.throughput == before.throughput
    assert after.error_texts == before.error_texts

    # An archive written before tables recorded starts has no started_at column: the start
    # figures then come from the rows still in the table alone.
    old_root = tmp_path / "old-archive"
    spark.read.parquet(str(root)).drop("started_at").write.partitionBy(*PARTITIONS).parquet(
        str(old_root)
    )
    without = build_report(messages_frame(spark, postgres_url, list(QUEUES), str(old_root)))
    in_table = sql_figures(queues["orders"])
    for key in LATENCY_KEYS:
        expected = in_table[key] if key in START_KEYS else before.queues["orders"][key]
        assert without.queues["orders"][key] == pytest.approx(expected, abs=1e-6), key

    chart = tmp_path / "report.png"
    labels = draw_chart(after, chart)
    assert labels == [
        "emails finished",
        "emails errors",
        "orders finished",
        "orders errors",
        *[f"{figure} {p}" for figure in ("latency", "wait", "run") for p in ("p50", "p90", "p99")],
    ]
    height, width, _ = matplotlib.image.imread(chart).shape
    assert (width, height) == (1100, 800)
    shutil.copy(chart, CHART_COPY)  # for a person to look at

    out, png = tmp_path / "report.json", tmp_path / "cli.png"
    result = CliRunner().invoke(
        pipeline,
        [
            "report",
            "--db",
            postgres_url,
            "--archive",
            str(root),
            "--out",
            str(out),
            "--png",
            str(png),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "orders" in result.output and "wait p50" in result.output
    assert "run: start -> finished" in result.output
    data = json.loads(out.read_text())
    assert data["queues"] == json.loads(json.dumps(before.queues))
    assert png.stat().st_size > 10_000
    database.close()


def utc(moment: datetime) -> datetime:
    """A time the core read, as UTC (engines without zones give naive UTC times)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


@pytest.mark.parametrize("engine", ["sqlite", "mariadb"])
def test_report_matches_the_rows(
    spark: SparkSession, engine: str, request: pytest.FixtureRequest
) -> None:
    """SQLite keeps times as text (the report parses them as UTC), MariaDB as DATETIME read
    through MariaDB's JDBC driver. Figures computed in Python from the rows the core reads
    (neither engine has a percentile function)."""
    url = str(request.getfixturevalue(f"{engine}_url"))
    with connect(url) as database:
        database.apply(QueueResource.from_name("emails"))
        queue = database.queue("emails")
        fill_history(queue, 600)
        t = queue.table
        with database.transaction() as connection:
            rows = connection.execute(
                sa.select(
                    t.c.status,
                    t.c.created_at,
                    t.c.process_after,
                    t.c.processed_at,
                    t.c.started_at,
                    t.c.updated_at,
                    t.c.last_error,
                )
            ).all()
    report = build_report(messages_frame(spark, url, ["emails"], None))
    processed = [r for r in rows if r.status == "Processed"]

    def cuts(values: list[float]) -> dict[str, float]:
        quantiles = statistics.quantiles(values, n=100, method="inclusive")
        return {"p50": quantiles[49], "p90": quantiles[89], "p99": quantiles[98]}

    figures = report.queues["emails"]
    assert figures["counts"] == dict(Counter(r.status for r in rows))
    finished = [r for r in rows if r.status in FINISHED]
    errors = [r for r in finished if r.status == "Error"]
    assert (figures["finished"], figures["errors"]) == (len(finished), len(errors))
    assert figures["errorRate"] == pytest.approx(len(errors) / len(finished))
    latency = [(r.processed_at - r.process_after).total_seconds() for r in processed]
    in_queue = [(r.processed_at - r.created_at).total_seconds() for r in processed]
    assert figures["latencySeconds"] == pytest.approx(cuts(latency), abs=1e-6)
    assert figures["timeInQueueSeconds"] == pytest.approx(cuts(in_queue), abs=1e-6)
    started = [r for r in processed if r.started_at is not None]
    assert 0 < len(started) < len(processed)  # rows finished before starts were recorded
    to_start = [(r.started_at - r.created_at).total_seconds() for r in started]
    to_finish = [(r.processed_at - r.started_at).total_seconds() for r in started]
    assert figures["enqueueToStartSeconds"] == pytest.approx(cuts(to_start), abs=1e-6)
    assert figures["startToFinishSeconds"] == pytest.approx(cuts(to_finish), abs=1e-6)

    hours: Counter[str] = Counter()
    error_hours: Counter[str] = Counter()
    for r in finished:
        hour = utc(r.processed_at or r.updated_at).strftime("%Y-%m-%dT%H")
        hours[hour] += 1
        error_hours[hour] += r.status == "Error"
    assert len(hours) > 3
    assert [(e["hour"][:13], e["finished"], e["errors"]) for e in report.throughput] == [
        (hour, hours[hour], error_hours[hour]) for hour in sorted(hours)
    ]
    texts = Counter(r.last_error.split("\n", 1)[0].strip() for r in errors)
    assert {e["error"]: e["count"] for e in report.error_texts} == dict(texts)


def test_an_hour_of_data_is_ticked_in_minutes(spark: SparkSession, sqlite_url: str) -> None:
    """Messages that all finished within a minute: the throughput axis spans the hour (or two,
    across an hour's end) they were counted in, ticked in minutes, not in years."""
    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("mail", keep_processed_for="1d"))
        queue = database.queue("mail")
        queue.enqueue_many([NewMessage(message={"n": n}) for n in range(20)])
        leased = queue.lease("w", 20).messages
        queue.complete("w", [Completion(m) for m in leased[:15]])
        queue.fail("w", [Failure(m, "bounced", permanent=True) for m in leased[15:]])
    report = build_report(messages_frame(spark, sqlite_url, ["mail"], None))
    hours = sorted(datetime.fromisoformat(entry["hour"]) for entry in report.throughput)
    assert sum(entry["finished"] for entry in report.throughput) == 20
    assert len(hours) in (1, 2)

    figure, _ = chart_figure(report)
    figure.canvas.draw()  # lays out the ticks
    throughput = figure.axes[0]
    ticks = [mdates.num2date(value) for value in throughput.get_xticks()]  # type: ignore[no-untyped-call]
    labels = [label.get_text() for label in throughput.get_xticklabels()]
    plt.close(figure)
    assert len(ticks) >= 3, labels
    assert hours[0] <= ticks[0] and ticks[-1] <= hours[-1] + timedelta(hours=1), labels
    assert max(later - earlier for earlier, later in itertools.pairwise(ticks)) < timedelta(hours=1)
    assert labels == [tick.strftime("%m-%d %H:%M") for tick in ticks]
