"""Progress of a running Spark job, told every few seconds: tasks done and counters so far."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType

from pyspark import Accumulator
from pyspark.sql import SparkSession


class Progress:
    """While open, calls `tell` every `every` seconds with a line such as
    `enqueue orders: 12/40 tasks, 120,000 messages (inserted 100,000, ...), 30 s`.

    Counters are accumulators: Spark adds a task's part when the task ends, so they move in
    steps of one partition (more partitions, finer steps).
    """

    def __init__(
        self,
        spark: SparkSession,
        title: str,
        counters: Mapping[str, Accumulator[int]],
        tell: Callable[[str], None],
        every: float = 5.0,
    ) -> None:
        self._spark = spark
        self._title = title
        self._counters = counters
        self._tell = tell
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tablequeue-progress", daemon=True)
        self._started = time.monotonic()

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _error: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self._tell(self.line())

    def line(self) -> str:
        tracker = self._spark.sparkContext.statusTracker()
        done = total = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        counts = ", ".join(f"{name} {counter.value:,}" for name, counter in self._counters.items())
        seconds = time.monotonic() - self._started
        return (
            f"{self._title}: {done}/{total} tasks of the running stage, {counts}, {seconds:.0f} s"
        )
