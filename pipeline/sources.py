"""Spark sources a pipeline reads: Parquet, CSV, JSON (lines), a JDBC table, or any format
Spark knows by name (orc, avro with its package, ...)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from py4j.protocol import Py4JJavaError
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
        reader = spark.read.format("jdbc").options(**target.options()).option("dbtable", table)
        try:
            return reader.options(**given).load()
        except (AnalysisException, Py4JJavaError) as error:
            raise InvalidInput(
                f"cannot read table {table} of {target.url}: {_first_line(error)}"
            ) from None
    # The user's options come last: Spark's option names ignore case and the last one set wins.
    merged = {**FILE_DEFAULTS.get(source_format.lower(), {}), **given}
    try:
        return spark.read.format(source_format).options(**merged).load(location)
    except (AnalysisException, Py4JJavaError) as error:
        raise InvalidInput(_unreadable(error, source_format, location)) from None


def _unreadable(error: Exception, source_format: str, location: str) -> str:
    """One line saying why Spark could not read `location` as `source_format`."""
    condition = _condition(error)
    if condition == "PATH_NOT_FOUND":
        return f"input not found: {location}"
    if condition == "DATA_SOURCE_NOT_FOUND":
        known = ", ".join([*FILE_DEFAULTS, "jdbc"])
        return f"unknown --format {source_format!r}: {known} or a format Spark has a package for"
    if condition == "UNABLE_TO_INFER_SCHEMA":
        return f"no {source_format} data in {location} (an empty folder?)"
    return f"cannot read {location} as {source_format}: {_first_line(error)}"


def _condition(error: Exception) -> str | None:
    """Spark's error condition: PySpark's exception has it, or the JVM's (a class not found is
    not converted to a Python exception)."""
    if isinstance(error, AnalysisException):
        return error.getCondition()
    if isinstance(error, Py4JJavaError):
        with contextlib.suppress(Exception):  # a JVM exception that is no SparkThrowable
            return str(error.java_exception.getCondition())
    return None


def _first_line(error: Exception) -> str:
    """The first line of Spark's message (the JVM's stack trace follows it)."""
    text = error.java_exception.toString() if isinstance(error, Py4JJavaError) else str(error)
    return text.strip().splitlines()[0] if text.strip() else type(error).__name__
