"""Files through Hadoop's FileSystem, so local paths, hdfs:// and s3a:// work the same way."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession


class HadoopFiles:
    """The few file operations the pipeline needs beyond Spark's readers and writers."""

    def __init__(self, spark: SparkSession, root: str) -> None:
        context = spark.sparkContext
        self._jvm: Any = context._jvm
        self.fs: Any = self.path(root).getFileSystem(context._jsc.hadoopConfiguration())

    def path(self, text: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(text)

    def exists(self, text: str) -> bool:
        return bool(self.fs.exists(self.path(text)))

    def touch(self, text: str) -> None:
        self.fs.create(self.path(text), True).close()

    def delete(self, text: str, recursive: bool = False) -> None:
        self.fs.delete(self.path(text), recursive)

    def names(self, folder: str) -> list[str]:
        if not self.exists(folder):
            return []
        return [str(status.getPath().getName()) for status in self.fs.listStatus(self.path(folder))]

    def glob(self, pattern: str) -> list[str]:
        found = self.fs.globStatus(self.path(pattern)) or []
        return [str(status.getPath().toString()) for status in found]
