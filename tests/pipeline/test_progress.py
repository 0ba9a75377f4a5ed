"""Progress lines: told on a timer while a job runs, and the totals once when it ends, however
short the job (a test or a user never depends on the job outlasting the timer)."""

from __future__ import annotations

import re

import pytest
from pyspark.sql import SparkSession

from tablequeue.pipeline.progress import Progress
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.spark]


def test_timer_lines_while_open_and_the_totals_last(spark: SparkSession) -> None:
    lines: list[str] = []
    done = spark.sparkContext.accumulator(0)
    with Progress(spark, "job", {"done": done}, lines.append, every=0.2):
        done.add(1234)
        # The timer's line: waited for with a deadline, the context stays open until it came.
        wait_until(lambda: [line for line in lines if "done 1,234" in line])
        timer_line = r"job: \d+/\d+ tasks of the running stage, done [\d,]+, \d+ s"
        assert re.fullmatch(timer_line, lines[0]), lines
    assert lines[-1].startswith("job: finished, done 1,234, "), lines
    assert sum(1 for line in lines if "finished" in line) == 1


def test_a_job_that_ends_before_the_timer_still_tells_its_totals(spark: SparkSession) -> None:
    lines: list[str] = []
    done = spark.sparkContext.accumulator(0)
    with Progress(spark, "job", {"done": done}, lines.append, every=3600):
        spark.sparkContext.parallelize(range(10), 2).foreach(lambda n: done.add(n))
    assert lines == [lines[-1]]
    assert lines[-1].startswith("job: finished, done 45, "), lines

    with (
        pytest.raises(ZeroDivisionError),
        Progress(spark, "job", {"done": done}, lines.append, every=3600),
    ):
        done.add(5)
        _ = 1 / 0
    assert lines[-1].startswith("job: stopped by an error, done 50 so far, "), lines
