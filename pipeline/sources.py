"""Spark sources a pipeline reads: Parquet, CSV, JSON (lines), a JDBC table, or any format
Spark knows by name (orc, avro with its package, ...)."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from tablequeue.errors import InvalidInput

from .jdbc import jdbc_target

FILE_DEFAULTS: dict[str, dict[str, str]] = {
    # RFC 4180, as Excel, PostgreSQL's COPY ... CSV and Python's csv module write it: a quote
    # inside a quoted field is doubled and a field may hold line breaks. Spark's own defaults
    # (backslash escapes, one record a line) garble such files.
    "csv": {"header": "true", "inferSchema": "false", "escape": '"', "multiLine": "true"},
    "json": {},
    "parquet": {},
}


def read_source(
    spark: SparkSession,
    source_format: str,
    location: str,
    *,
    table: str | None = None,
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """A DataFrame from `location`: a path (glob, folder, `s3a://...`) for file formats, a
    database URL (tablequeue style or `jdbc:...`) with `table` for `jdbc`.

    `options` go to Spark's reader unchanged, e.g. `partitionColumn`, `lowerBound`,
    `upperBound` and `numPartitions` to read a JDBC table in parallel by id ranges.
    """
    given = dict(options or {})
    if source_format == "jdbc":
        if not table:
            raise InvalidInput("a JDBC source needs --table (a table name or a subquery)")
        target = jdbc_target(location)
        return (
            spark.read.format("jdbc")
            .options(**target.options())
            .option("dbtable", table)
            .options(**given)
            .load()
        )
    # The user's options come last: Spark's option names ignore case and the last one set wins.
    merged = {**FILE_DEFAULTS.get(source_format.lower(), {}), **given}
    try:
        return spark.read.format(source_format).options(**merged).load(location)
    except AnalysisException as error:
        if error.getCondition() == "PATH_NOT_FOUND":
            raise InvalidInput(f"input not found: {location}") from None
        raise
