"""One real local Spark session for every pipeline test (a JVM takes seconds to start), small
enough for a 2-core machine; each engine once (`tests.support.engines`: besides, Spark reads
MariaDB through the same JDBC driver whatever Python driver the URL names)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from tablequeue.pipeline.spark import session
from tests.support.engines import db_url_each_engine_once  # noqa: F401 (this folder's db_url)

TEST_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    with _environment_kept():
        spark = session("local[2]", TEST_CONF, app_name="tablequeue-tests")
    yield spark
    spark.stop()


@pytest.fixture(autouse=True)
def _jobs_leave_the_environment() -> Iterator[None]:
    """The jobs the tests run in this process (`tablequeue pipeline ...` through CliRunner) call
    session() too."""
    with _environment_kept():
        yield


@contextlib.contextmanager
def _environment_kept() -> Iterator[None]:
    """session() sets variables for the job's process (PYTHONSAFEPATH, PYSPARK_PYTHON, ...) that
    Spark reads as it starts. In a test process they would stay for every later test of this
    pytest worker: a `python -m tests.support...` child started then would not find `tests`."""
    before = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)
