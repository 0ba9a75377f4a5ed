"""Charts of the past from the rollup table (`tablequeue.rollup`): per queue and for all.

Every series has one value per step of the window, at the times of `time` (Unix seconds, the
start of each step). Counts are totals over the step; latency percentiles (seconds, from due to
processed) come from the step's merged histogram; `backlog` is the last sample in the step;
null means nothing was measured (no worker wrote then, the queue did not exist yet, no success
for latency), never 0.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from tablequeue.rollup import chart_series

from ..databases import QueueRef
from ..dependencies import READER, DatabaseArg, DatabasesArg, QueueArg

router = APIRouter(tags=["charts"])
Window = Annotated[
    Literal["1h", "24h", "7d"],
    Query(description="1h: a point a minute; 24h: every 5 minutes; 7d: every hour."),
]


class Series(BaseModel):
    enqueued: list[int | None] = Field(
        description="Messages created in the step (each counted once: by the worker that "
        "leased it first, or in the queue table while never leased); null before the queue "
        "existed."
    )
    processed: list[int | None] = Field(
        description="Successes recorded; null where no worker wrote."
    )
    failed: list[int | None] = Field(
        description="Failures recorded (retried or sent to Error); null where no worker wrote."
    )
    latencyP50: list[float | None]
    latencyP90: list[float | None]
    latencyP99: list[float | None] = Field(
        description="Seconds from due (process_after) to processed, of the step's successes."
    )
    latencyMax: list[float | None]
    backlog: list[int | None] = Field(description="Due messages, the last sample of the step.")


class QueueSeries(Series):
    queue: str


class ListedSeries(QueueSeries):
    database: str


class Charts(BaseModel):
    window: str
    stepSeconds: int
    from_: str = Field(alias="from", description="Start of the first step (UTC).")
    to: str = Field(description="End of the last step (UTC), after the database's now.")
    now: str = Field(description="The database's clock when read.")
    time: list[int] = Field(description="Start of each step, Unix seconds.")


class AllCharts(Charts):
    queues: list[QueueSeries] = Field(description="Each queue in the registry, by name.")
    total: Series = Field(description="All queues together (percentiles of all successes).")


class QueueCharts(Charts, Series):
    queue: str


class ListedCharts(Charts):
    queues: list[ListedSeries] = Field(
        description="One per queue asked for, in that order, on the steps of `time` (those of "
        "the first one's database: a step another database's clock does not share is null)."
    )


QueueList = Annotated[
    list[str],
    Query(
        alias="queue",
        min_length=1,
        max_length=100,
        description="A queue: its name in the default database, or DATABASE/NAME; repeat it.",
    ),
]


@router.get("/charts", dependencies=READER, response_model=AllCharts, response_model_by_alias=True)
def all_charts(database: DatabaseArg, window: Window = "1h") -> dict[str, Any]:
    """Enqueued, processed, failed, latency percentiles and backlog of every queue, and all."""
    names = [row["name"] for row in database.queues()]
    return chart_series(database, window, names)


@router.get(
    "/charts/queues",
    dependencies=READER,
    response_model=ListedCharts,
    response_model_by_alias=True,
)
def listed_charts(
    databases: DatabasesArg, queues: QueueList, window: Window = "1h"
) -> dict[str, Any]:
    """The series of each queue listed, from any database the API serves: one a queue."""
    refs = [QueueRef.parse(text) for text in queues]
    by_database: dict[str, list[str]] = {}
    for ref in refs:
        databases.get(ref.database).queue(ref.name)  # 404 for a queue that does not exist
        by_database.setdefault(ref.database, []).append(ref.name)
    charts = {
        name: chart_series(databases.get(name), window, names)
        for name, names in by_database.items()
    }
    first = charts[refs[0].database]
    found = {
        (name, series["queue"]): aligned(series, shown["time"], first["time"])
        for name, shown in charts.items()
        for series in shown["queues"]
    }
    listed = [found[ref.database, ref.name] | {"database": ref.database} for ref in refs]
    first.pop("total")
    return first | {"queues": listed}


def aligned(series: dict[str, Any], times: list[int], onto: list[int]) -> dict[str, Any]:
    """`series` (on the steps `times`) on the steps `onto`: null where it has no such step."""
    if times == onto:
        return series
    index = {t: i for i, t in enumerate(times)}
    return {
        key: [values[index[t]] if t in index else None for t in onto]
        if isinstance(values, list)
        else values
        for key, values in series.items()
    }


@router.get(
    "/queues/{name}/charts",
    dependencies=READER,
    response_model=QueueCharts,
    response_model_by_alias=True,
)
def queue_charts(database: DatabaseArg, queue: QueueArg, window: Window = "1h") -> dict[str, Any]:
    """Enqueued, processed, failed, latency percentiles and backlog of one queue."""
    charts = chart_series(database, window, [queue.name])
    [series] = charts.pop("queues")
    charts.pop("total")
    shown: dict[str, Any] = charts | series
    return shown
