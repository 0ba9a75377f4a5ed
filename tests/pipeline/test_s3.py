"""The pipeline on object storage: a source read from `s3a://...` and the archive written to
`s3a://...`, against moto's S3 server on loopback, with hadoop-aws and the AWS SDK bundle that
scripts/setup-pipeline caches. Credentials come only from the environment (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY) and never appear in what the jobs print."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
import sqlalchemy as sa
from pyspark.sql import SparkSession

from tablequeue import connect
from tablequeue.pipeline.spark import hadoop_version, s3a_jars
from tablequeue.spec import QueueResource
from tests.support.ports import free_port
from tests.support.processes import die_with_parent, stop_process
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "tablequeue"
MESSAGES = 200


@dataclass
class S3Server:
    endpoint: str
    access_key: str
    secret_key: str

    def client(self) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name="us-east-1",
        )

    def environment(self) -> dict[str, str]:
        """What a job gets: the standard AWS variables, nothing on its command line."""
        return {
            **os.environ,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
        }

    def spark_conf(self) -> list[str]:
        return [
            *("--conf", f"spark.hadoop.fs.s3a.endpoint={self.endpoint}"),
            *("--conf", "spark.hadoop.fs.s3a.endpoint.region=us-east-1"),
            *("--conf", "spark.hadoop.fs.s3a.path.style.access=true"),
        ]


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 server on a free loopback port, with one bucket."""
    port = free_port()
    log = (tmp_path_factory.mktemp("moto") / "moto.log").open("wb")
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=die_with_parent,
    )
    server = S3Server(
        endpoint=f"http://127.0.0.1:{port}",
        access_key=f"AKIA{secrets.token_hex(8).upper()}",
        secret_key=secrets.token_urlsafe(30),
    )
    try:
        wait_until(lambda: _answers(server.endpoint, process), timeout=60, interval=0.2)
        server.client().create_bucket(Bucket=BUCKET)
        yield server
    finally:
        stop_process(process)
        log.close()


def _answers(endpoint: str, process: subprocess.Popen[bytes]) -> bool:
    assert process.poll() is None, "moto_server exited while starting"
    try:
        with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2):
            return True
    except OSError:
        return False


def pipeline(server: S3Server, *arguments: str) -> subprocess.CompletedProcess[str]:
    """`tablequeue pipeline ...` in a process of its own, local Spark, S3 settings as --conf."""
    return subprocess.run(
        [
            *(str(Path(sys.executable).parent / "tablequeue"), "pipeline", *arguments),
            *("--master", "local[1]", "--conf", "spark.ui.enabled=false"),
            *server.spark_conf(),
        ],
        env=server.environment(),
        cwd="/",
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_cached_connector_matches_the_hadoop_inside_pyspark() -> None:
    """scripts/setup-pipeline pins the Hadoop of the pinned pyspark: a pyspark bump that changes
    it fails here, not on a user's first s3a:// path."""
    pinned = re.search(
        r'^hadoop_version="([^"]+)"$', (ROOT / "scripts/setup-pipeline").read_text(), re.M
    )
    assert pinned and pinned[1] == hadoop_version()
    assert f"hadoop-aws-{hadoop_version()}.jar" in [Path(jar).name for jar in s3a_jars()]


def test_enqueue_from_and_archive_to_s3(
    s3: S3Server, sqlite_url: str, tmp_path: Path, spark: SparkSession
) -> None:
    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("mail", idempotent=True))
    sent = {
        f"M-{n:04d}": {"id": f"M-{n:04d}", "to": f"user{n}@example.com"} for n in range(MESSAGES)
    }
    client = s3.client()
    client.put_object(
        Bucket=BUCKET,
        Key="incoming/mail.jsonl",
        Body="".join(json.dumps(body) + "\n" for body in sent.values()).encode(),
    )

    enqueued = pipeline(
        s3, "enqueue", "mail", f"s3a://{BUCKET}/incoming/mail.jsonl", "--id-column", "id",
        "--db", sqlite_url,
    )  # fmt: skip
    assert enqueued.returncode == 0, enqueued.stderr[-6000:]
    assert f"mail: inserted {MESSAGES}, updated 0, unchanged 0, rejected 0 in " in enqueued.stdout
    with connect(sqlite_url) as database:
        queue = database.queue("mail")
        assert {m.message_id: m.message for m in queue.messages(limit=MESSAGES + 1)} == sent
        two_days_ago = datetime.now(UTC) - timedelta(days=2)
        with database.transaction() as connection:
            connection.execute(
                sa.update(queue.table).values(
                    status="Processed", processed_at=two_days_ago, updated_at=two_days_ago
                )
            )

    archived = pipeline(
        s3, "archive", "mail", "--to", f"s3a://{BUCKET}/archive", "--older-than", "1d",
        "--db", sqlite_url,
    )  # fmt: skip
    assert archived.returncode == 0, archived.stderr[-6000:]
    assert f"mail: archived {MESSAGES}, deleted {MESSAGES} in " in archived.stdout
    with connect(sqlite_url) as database:
        assert database.queue("mail").count() == 0
    keys = [
        item["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(
            Bucket=BUCKET, Prefix="archive/"
        )
        for item in page.get("Contents", [])
    ]
    # The run's journal markers are gone (S3A may leave an empty folder marker in their place).
    assert not [key for key in keys if key.endswith((".started", ".written"))], keys
    local = tmp_path / "archive"
    for key in keys:
        if key.endswith(".parquet"):
            target = local / key.removeprefix("archive/")
            target.parent.mkdir(parents=True, exist_ok=True)
            client.download_file(BUCKET, key, str(target))
    assert all(
        key.startswith("archive/queue=mail/status=Processed/date=")
        for key in keys
        if key.endswith(".parquet")
    )
    ids = [row.message_id for row in spark.read.parquet(str(local)).select("message_id").collect()]
    assert sorted(ids) == sorted(sent)

    for run in (enqueued, archived):
        for secret in (s3.access_key, s3.secret_key):
            assert secret not in run.stdout + run.stderr
