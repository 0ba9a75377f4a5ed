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
    `enqueue orders: 12/40 tasks of the running stage, inserted 100,000, ..., 30 s`, and once
    more when it closes, whatever the job's length: the totals
    (`enqueue orders: finished, inserted 120,000, ..., 42 s`, or `stopped by an error, ...
    so far` when the job raised).

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
        error: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._tell(self.final_line(failed=error is not None))

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self._tell(self.line())

    def final_line(self, failed: bool = False) -> str:
        """The totals once the job ended (the counters hold every finished task's part)."""
        outcome = "stopped by an error" if failed else "finished"
        so_far = " so far" if failed else ""
        return f"{self._title}: {outcome}, {self._counts()}{so_far}, {self._seconds():.0f} s"

    def line(self) -> str:
        tracker = self._spark.sparkContext.statusTracker()
        done = total = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        return (
            f"{self._title}: {done}/{total} tasks of the running stage, {self._counts()}, "
            f"{self._seconds():.0f} s"
        )

    def _counts(self) -> str:
        return ", ".join(f"{name} {counter.value:,}" for name, counter in self._counters.items())

    def _seconds(self) -> float:
        return time.monotonic() - self._started
