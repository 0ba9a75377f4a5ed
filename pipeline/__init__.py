"""The PySpark pipeline: bulk enqueue from any Spark source, archive to Parquet, latency report.

`tablequeue pipeline enqueue|archive|report ...`, `python -m tablequeue.pipeline ...` or
`spark-submit pipeline/__main__.py ...`. Local Spark (`local[*]`) unless `--master` says otherwise.
"""
