"""The report as a PNG a person can look at: throughput per hour and latency percentiles."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: a file only

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from .report import PERCENTILES, Report

CHART_LATENCIES = {
    "latencySeconds": ("latency", "Purples"),
    "enqueueToStartSeconds": ("wait", "Oranges"),
    "startToFinishSeconds": ("run", "Greens"),
}
"""The latency figures drawn as bars (label, colour map); a queue without starts has none."""
LEGEND: dict[str, Any] = {"loc": "upper left", "bbox_to_anchor": (1.01, 1), "fontsize": "small"}
"""Legends right of their panel, outside it: inside, they hid lines and the first bars."""
MAX_HOURS = 24 * 92
"""Longer histories plot only the hours that have data."""
HOUR = timedelta(hours=1)


def draw_chart(report: Report, path: str | Path) -> list[str]:
    """Write the chart to `path`; returns the labels of the series drawn (one throughput line
    and one error line per queue, one bar series per latency figure and percentile)."""
    figure, labels = chart_figure(report)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return labels


def chart_figure(report: Report) -> tuple[Figure, list[str]]:
    """The chart's figure (throughput above, latencies below) and the labels of its series."""
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(11, 8), constrained_layout=True)
    labels: list[str] = []
    every_hour = _hours(report)
    for name in report.queues:
        counts = {e["hour"]: e for e in report.throughput if e["queue"] == name}
        if not counts:
            continue
        finished = [counts[h]["finished"] if h in counts else 0 for h in every_hour]
        errors = [counts[h]["errors"] if h in counts else 0 for h in every_hour]
        # An hour's count at the middle of the hour it counts.
        times = [datetime.fromisoformat(hour) + HOUR / 2 for hour in every_hour]
        (line,) = top.plot(times, finished, marker=".", label=f"{name} finished")
        top.plot(times, errors, linestyle="--", color=line.get_color(), label=f"{name} errors")
        labels += [f"{name} finished", f"{name} errors"]
    top.set_title("Throughput per hour (UTC)")
    top.set_ylabel("messages finished")
    if every_hour:
        # The hours counted, whole, so the ticks follow the data's span: left to matplotlib,
        # a single hour's point sits in a four-year range ticked by the year.
        top.set_xlim(
            datetime.fromisoformat(every_hour[0]), datetime.fromisoformat(every_hour[-1]) + HOUR
        )
    top.xaxis.set_major_formatter(mdates.DateFormatter("%m-%d %H:%M"))  # type: ignore[no-untyped-call]
    if labels:
        top.legend(**LEGEND)

    with_latency = [name for name, q in report.queues.items() if q["latencySeconds"]]
    bars = [(figure_key, p) for figure_key in CHART_LATENCIES for p in PERCENTILES]
    width = 0.8 / len(bars)
    for index, (figure_key, percentile) in enumerate(bars):
        key = f"p{round(percentile * 100)}"
        label, colors = CHART_LATENCIES[figure_key]
        values = [
            (report.queues[name][figure_key] or {}).get(key, math.nan) for name in with_latency
        ]
        positions = [q + (index - (len(bars) - 1) / 2) * width for q in range(len(with_latency))]
        shade_index = PERCENTILES.index(percentile)
        shade = plt.get_cmap(colors)(0.4 + 0.5 * shade_index / max(len(PERCENTILES) - 1, 1))
        bottom.bar(positions, values, width, label=f"{label} {key}", color=shade)
        labels.append(f"{label} {key}")
    bottom.set_xticks(range(len(with_latency)), with_latency)
    bottom.set_title(
        "Latency of Processed messages: due -> finished, enqueued -> start, start -> finished"
    )
    bottom.set_ylabel("seconds")
    bottom.legend(**LEGEND)
    return figure, labels


def _hours(report: Report) -> list[str]:
    """Every hour from the first to the last one with finished messages, so hours without any
    show as zero instead of a line drawn across them."""
    if not report.throughput:
        return []
    known = sorted({entry["hour"] for entry in report.throughput})
    first, last = datetime.fromisoformat(known[0]), datetime.fromisoformat(known[-1])
    count = int((last - first) / HOUR) + 1
    if count > MAX_HOURS:  # a long, sparse history: the hours that have data only
        return known
    return [(first + n * HOUR).isoformat() for n in range(count)]
