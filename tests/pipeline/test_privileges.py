"""Least privilege for the Spark pipeline on PostgreSQL (docs/guarantees.md): enqueue, archive
and report run as a role holding only the grants the guarantees tell a DBA to give it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tablequeue import connect
from tablequeue.pipeline.archive import archive_queue
from tablequeue.pipeline.enqueue import enqueue_frame
from tablequeue.pipeline.messages import MessageColumns
from tablequeue.pipeline.report import build_report, messages_frame
from tablequeue.spec import QueueResource

from .history import fill_history

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROLE = "tq_pipeline"
GRANTS = [
    f"GRANT SELECT ON tablequeue_queues TO {ROLE}",
    f"GRANT SELECT, INSERT, UPDATE, DELETE ON jobs TO {ROLE}",
]
"""What docs/guarantees.md tells a DBA to grant the pipeline (names fixed above)."""


@pytest.fixture
def pipeline_url(postgres_url: str) -> Iterator[str]:
    """A queue `jobs` with a past, made by the owner; the URL of a role with only GRANTS."""
    with connect(postgres_url) as owner:
        owner.apply(QueueResource.from_name("jobs"))
        fill_history(owner.queue("jobs"), 300)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"DROP ROLE IF EXISTS {ROLE}")
        connection.execute(f"CREATE ROLE {ROLE} LOGIN")
        for grant in GRANTS:
            connection.execute(grant)
    yield postgres_url.replace("postgres@", f"{ROLE}@", 1)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("DROP TABLE IF EXISTS jobs, tablequeue_queues")
        connection.execute(f"DROP OWNED BY {ROLE}")
        connection.execute(f"DROP ROLE {ROLE}")


def test_the_pipeline_works_with_only_its_grants(
    spark: SparkSession, pipeline_url: str, tmp_path: Path
) -> None:
    products = spark.range(50).select(
        F.format_string("SKU-%03d", F.col("id")).alias("sku"),
        F.to_json(F.struct(F.col("id").alias("n"))).alias("doc"),
    )
    columns = MessageColumns(json_column="doc", id_column="sku")
    first = enqueue_frame(spark, products, pipeline_url, "jobs", columns, batch_size=20)
    again = enqueue_frame(spark, products, pipeline_url, "jobs", columns, batch_size=20)
    assert (first.inserted, again.updated) == (50, 50)  # an identity's re-enqueue is an update

    archive = tmp_path / "archive"
    archived = archive_queue(spark, pipeline_url, "jobs", str(archive), timedelta(days=1))
    assert archived.archived == archived.deleted > 0

    report = build_report(messages_frame(spark, pipeline_url, ["jobs"], str(archive)))
    assert report.to_json()
