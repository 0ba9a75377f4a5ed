"""The report as a PNG a person can look at: throughput per hour and latency percentiles."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: a file only

import matplotlib.dates as mdates
import matplotlib.pyplot as plt

from .report import PERCENTILES, Report


def draw_chart(report: Report, path: str | Path) -> list[str]:
    """Write the chart to `path`; returns the labels of the series drawn (one throughput line
    and one error line per queue, one latency bar group per percentile)."""
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(11, 8), constrained_layout=True)
    labels: list[str] = []
    for name in report.queues:
        hours = [entry for entry in report.throughput if entry["queue"] == name]
        if not hours:
            continue
        times = [datetime.fromisoformat(entry["hour"]) for entry in hours]
        (line,) = top.plot(
            times, [e["finished"] for e in hours], marker="o", label=f"{name} finished"
        )
        labels.append(f"{name} finished")
        top.plot(
            times,
            [e["errors"] for e in hours],
            linestyle="--",
            color=line.get_color(),
            label=f"{name} errors",
        )
        labels.append(f"{name} errors")
    top.set_title("Throughput per hour (UTC)")
    top.set_ylabel("messages finished")
    top.xaxis.set_major_formatter(mdates.DateFormatter("%m-%d %H:%M"))
    if labels:
        top.legend(fontsize="small")

    with_latency = [name for name, q in report.queues.items() if q["latencySeconds"]]
    width = 0.8 / len(PERCENTILES)
    for index, percentile in enumerate(PERCENTILES):
        key = f"p{round(percentile * 100)}"
        values = [report.queues[name]["latencySeconds"][key] for name in with_latency]
        positions = [
            q + (index - (len(PERCENTILES) - 1) / 2) * width for q in range(len(with_latency))
        ]
        bottom.bar(positions, values, width, label=f"latency {key}")
        labels.append(f"latency {key}")
    bottom.set_xticks(range(len(with_latency)), with_latency)
    bottom.set_title("Queue latency (due -> finished), Processed messages")
    bottom.set_ylabel("seconds")
    bottom.legend(fontsize="small")
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return labels
