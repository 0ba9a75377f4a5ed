"""One real local Spark session for every pipeline test (a JVM takes seconds to start), small
enough for a 2-core machine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from tablequeue.pipeline.spark import session

TEST_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    spark = session("local[2]", TEST_CONF, app_name="tablequeue-tests")
    yield spark
    spark.stop()
