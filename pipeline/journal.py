"""The archive's journal: which run of which queue wrote its Parquet and has yet to delete.

Markers are empty files under `<archive>/_tablequeue_runs/<queue>/` (Spark skips folders whose
name starts with `_` when it reads the archive), written through Hadoop's FileSystem, so an
archive on HDFS, S3 (s3a://) or a local disk works the same way.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from .files import HadoopFiles

STARTED = "started"
WRITTEN = "written"
JOURNAL_FOLDER = "_tablequeue_runs"


class Journal:
    """Run markers of one queue in one archive: `<run>.started` before the Parquet is written,
    `<run>.written` once it is complete, both removed when the run's rows are deleted."""

    def __init__(self, spark: SparkSession, root: str, queue: str) -> None:
        self.root = root.rstrip("/")
        self.queue = queue
        self._folder = f"{self.root}/{JOURNAL_FOLDER}/{queue}"
        self._files = HadoopFiles(spark, self.root)

    def mark(self, run: str, state: str) -> None:
        self._files.touch(f"{self._folder}/{run}.{state}")

    def runs(self, state: str) -> list[str]:
        """Runs with a marker in this state, oldest first (run ids sort by time)."""
        suffix = f".{state}"
        names = self._files.names(self._folder)
        return sorted(name[: -len(suffix)] for name in names if name.endswith(suffix))

    def clear(self, run: str) -> None:
        for state in (WRITTEN, STARTED):  # `started` last: a half-cleared run looks unfinished
            self._files.delete(f"{self._folder}/{run}.{state}")

    def run_files(self, run: str) -> list[str]:
        """The partition folders a run wrote: `<root>/queue=Q/status=S/date=D/run=R`."""
        return self._files.glob(f"{self.root}/queue={self.queue}/status=*/date=*/run={run}")

    def remove_run_files(self, run: str) -> None:
        for folder in self.run_files(run):
            self._files.delete(folder, recursive=True)
