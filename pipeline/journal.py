"""The archive's journal: which run of which queue wrote its Parquet and has yet to delete.

Markers are empty files under `<archive>/_tablequeue_runs/<queue>/` (Spark skips folders whose
name starts with `_` when it reads the archive). They go through Hadoop's FileSystem, so an
archive on HDFS, S3 (s3a://) or a local disk works the same way.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

STARTED = "started"
WRITTEN = "written"
JOURNAL_FOLDER = "_tablequeue_runs"


class Journal:
    """Run markers of one queue in one archive: `<run>.started` before the Parquet is written,
    `<run>.written` once it is complete, both removed when the run's rows are deleted."""

    def __init__(self, spark: SparkSession, root: str, queue: str) -> None:
        self._spark = spark
        self.root = root.rstrip("/")
        self.queue = queue
        self._folder = f"{self.root}/{JOURNAL_FOLDER}/{queue}"
        self._fs = self._path(self.root).getFileSystem(
            spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001 (no public handle)
        )

    def _path(self, text: str) -> Any:
        jvm: Any = self._spark.sparkContext._jvm  # noqa: SLF001
        return jvm.org.apache.hadoop.fs.Path(text)

    def mark(self, run: str, state: str) -> None:
        self._fs.mkdirs(self._path(self._folder))
        self._fs.create(self._path(f"{self._folder}/{run}.{state}"), True).close()

    def runs(self, state: str) -> list[str]:
        """Runs with a marker in this state, oldest first (run ids sort by time)."""
        if not self._fs.exists(self._path(self._folder)):
            return []
        suffix = f".{state}"
        found = [
            str(status.getPath().getName()) for status in self._fs.listStatus(self._path(self._folder))
        ]
        return sorted(name[: -len(suffix)] for name in found if name.endswith(suffix))

    def clear(self, run: str) -> None:
        for state in (WRITTEN, STARTED):  # `started` last: a half-cleared run looks unfinished
            self._fs.delete(self._path(f"{self._folder}/{run}.{state}"), False)

    def run_files(self, run: str) -> list[str]:
        """The partition folders a run wrote: `<root>/queue=Q/status=S/date=D/run=R`."""
        pattern = f"{self.root}/queue={self.queue}/status=*/date=*/run={run}"
        statuses = self._fs.globStatus(self._path(pattern)) or []
        return [str(status.getPath().toString()) for status in statuses]

    def remove_run_files(self, run: str) -> None:
        for folder in self.run_files(run):
            self._fs.delete(self._path(folder), True)
