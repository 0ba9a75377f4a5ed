"""Starting a Spark session for the pipeline: master, configuration, JDBC driver jars."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

DEBIAN_JARS = (Path("/usr/share/java/postgresql.jar"),)
"""Debian's libpostgresql-jdbc-java; scripts/setup-pipeline installs it."""
JAR_CACHE = Path(
    os.environ.get("TABLEQUEUE_JAR_CACHE", Path.home() / ".cache" / "tablequeue" / "jars")
)
"""Where scripts/setup-pipeline puts the drivers Debian does not package, one folder a version,
and the S3A connector (`s3a/<Hadoop version>/`)."""

_JAR_NAME = re.compile(r"^(?P<artifact>.+?)-(?P<version>\d[\w.]*)\.jar$")


def _version_key(version: str) -> tuple[int | str, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"[.-]", version))


def driver_jars(cache: Path = JAR_CACHE) -> list[str]:
    """The JDBC driver jars found on this machine: Debian's, then the newest cached version of
    each driver (two versions of one driver on the class path would be a lottery).
    `TABLEQUEUE_JARS` (comma-separated paths) adds more."""
    newest: dict[str, tuple[tuple[int | str, ...], Path]] = {}
    for jar in cache.glob("*/*.jar") if cache.is_dir() else []:
        match = _JAR_NAME.fullmatch(jar.name)
        if match is None:
            continue
        key = _version_key(match["version"])
        known = newest.get(match["artifact"])
        if known is None or key > known[0]:
            newest[match["artifact"]] = (key, jar)
    jars = [str(jar) for jar in DEBIAN_JARS if jar.is_file()]
    jars += [str(path) for _, path in sorted(newest.values(), key=lambda item: str(item[1]))]
    jars += [jar for jar in os.environ.get("TABLEQUEUE_JARS", "").split(",") if jar]
    return jars


def hadoop_version() -> str | None:
    """The Hadoop inside the Spark that runs (the version of its hadoop-client-api jar); None
    for a Spark built without Hadoop."""
    prefix = "hadoop-client-api-"
    # Under spark-submit, pyspark is imported from a zip inside SPARK_HOME.
    home = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
    for jar in (home / "jars").glob(f"{prefix}*.jar"):
        return jar.name.removeprefix(prefix).removesuffix(".jar")
    return None


def s3a_jars(cache: Path = JAR_CACHE) -> list[str]:
    """hadoop-aws of the Hadoop inside Spark and what it needs (the AWS SDK bundle, the S3
    analytics accelerator), as scripts/setup-pipeline caches them (`s3a/<Hadoop version>/`);
    none if not there."""
    version = hadoop_version()
    if version is None:
        return []
    return sorted(str(jar) for jar in (cache / "s3a" / version).glob("*.jar"))


def session(
    master: str | None = None,
    conf: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    app_name: str = "tablequeue-pipeline",
) -> SparkSession:
    """The Spark session of a pipeline job: `local[*]` unless a master is given (or spark-submit
    set one), UTC session time zone, the JDBC driver jars of this machine.

    `conf` is passed through as is (`spark.executor.instances`, `spark.kubernetes.*`, ...) and
    wins over the defaults set here.
    """
    # The driver's loopback address: machines whose host name resolves to nothing reachable.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers run this interpreter (with tablequeue installed), and not with the current
    # folder first on sys.path: a checkout's `operator/` folder would shadow the standard library.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYTHONSAFEPATH", "1")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # set when spark-submit started us
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif not submitted:
        builder = builder.master("local[*]")
    defaults = {
        "spark.sql.session.timeZone": "UTC",
        "spark.executorEnv.PYTHONSAFEPATH": "1",
        "spark.ui.showConsoleProgress": "false",  # the pipeline tells its own progress
    }
    jars = driver_jars()
    if jars and not submitted:
        defaults["spark.jars"] = ",".join(jars)
    # On the class path, not spark.jars: every executor would fetch a copy of the ~690 MB SDK.
    # Under spark-submit the driver's JVM is running already: its --driver-class-path counts.
    s3a = s3a_jars()
    if s3a:
        defaults["spark.driver.extraClassPath"] = os.pathsep.join(s3a)
        defaults["spark.executor.extraClassPath"] = os.pathsep.join(s3a)
    settings = dict(defaults)
    settings.update(dict(conf.items()) if isinstance(conf, Mapping) else dict(conf))
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if submitted:
        _driver_loads(spark, jars)
    return spark


def _driver_loads(spark: SparkSession, jars: Iterable[str]) -> None:
    """Under spark-submit the driver's JVM is running before the pipeline starts: spark.jars set
    then reaches the executors but not the driver, whose JDBC reads (archive, report) would miss
    their driver class. `ADD JAR` (the session's resource loader) gives them to both."""
    loader = spark._jsparkSession.sessionState().resourceLoader()
    for jar in jars:
        loader.addJar(jar)
