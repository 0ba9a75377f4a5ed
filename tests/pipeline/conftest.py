"""A real local Spark session per test module, small enough for a 2-core machine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pyspark = pytest.importorskip("pyspark", reason="the pipeline extra is not installed")

from pyspark.sql import SparkSession  # noqa: E402

from tablequeue.pipeline.spark import session  # noqa: E402

TEST_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: starts a local Spark session (tablequeue.pipeline)")
    config.addinivalue_line("markers", "slow: takes tens of seconds")


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    spark = session("local[2]", TEST_CONF, app_name="tablequeue-tests")
    yield spark
    spark.stop()
