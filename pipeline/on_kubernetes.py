"""The spark-submit command of a pipeline job on Kubernetes (`--master k8s://...`, cluster mode).

The driver and executor pods run the pipeline image (Dockerfile.pipeline); the database URL
reaches them from a Secret (`spark.kubernetes.{driver,executor}.secretKeyRef.TABLEQUEUE_DB`),
never on the command line, where `ps`, the pod's spec and Spark's UI would show it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tablequeue.errors import InvalidInput

IMAGE_PYTHON = "/opt/tablequeue/bin/python3"
"""The virtualenv's Python in the pipeline image (its PYSPARK_PYTHON)."""
IMAGE_MAIN = "local:///opt/tablequeue/lib/python3.11/site-packages/tablequeue/pipeline/__main__.py"
"""The pipeline's entry point inside the image (`local://`: nothing is uploaded)."""
IMAGE_CLASSPATH = "/usr/share/java/postgresql.jar:/opt/tablequeue/jars/drivers/*"
"""The image's JDBC drivers (Dockerfile.pipeline), on the class path of the driver's and the
executors' JVMs as they start: spark-submit starts the driver's before the pipeline's session
names them."""
DATABASE_ENV = "TABLEQUEUE_DB"
"""The variable the pipeline's `--db` reads."""
IN_CLUSTER_API = "https://kubernetes.default.svc"


@dataclass(frozen=True)
class KubernetesJob:
    """Where and how big a pipeline job runs on Kubernetes."""

    image: str
    namespace: str
    service_account: str
    """The driver's ServiceAccount: it creates, watches and deletes the executor pods."""
    database_secret: str
    database_key: str = "url"
    api_server: str = IN_CLUSTER_API
    name: str = "tablequeue-pipeline"
    executors: int = 2
    executor_cores: int = 1
    executor_memory: str = "1g"
    driver_cores: int = 1
    driver_memory: str = "1g"
    image_pull_policy: str = "IfNotPresent"
    extra_conf: Mapping[str, str] = field(default_factory=dict)
    """Further Spark settings, after (and over) the job's own: volumes
    (`spark.kubernetes.executor.volumes.*`), CPU requests below the cores, s3a's, ..."""

    def conf(self) -> dict[str, str]:
        """The Spark settings of the job, by name."""
        secret = f"{self.database_secret}:{self.database_key}"
        return {
            "spark.kubernetes.container.image": self.image,
            "spark.kubernetes.container.image.pullPolicy": self.image_pull_policy,
            "spark.kubernetes.namespace": self.namespace,
            "spark.kubernetes.authenticate.driver.serviceAccountName": self.service_account,
            f"spark.kubernetes.driver.secretKeyRef.{DATABASE_ENV}": secret,
            f"spark.kubernetes.executor.secretKeyRef.{DATABASE_ENV}": secret,
            "spark.driver.extraClassPath": IMAGE_CLASSPATH,
            "spark.executor.extraClassPath": IMAGE_CLASSPATH,
            "spark.pyspark.python": IMAGE_PYTHON,
            "spark.pyspark.driver.python": IMAGE_PYTHON,
            "spark.executor.instances": str(self.executors),
            "spark.executor.cores": str(self.executor_cores),
            "spark.executor.memory": self.executor_memory,
            "spark.driver.cores": str(self.driver_cores),
            "spark.driver.memory": self.driver_memory,
        } | dict(self.extra_conf)


def submit_command(job: KubernetesJob, arguments: Sequence[str]) -> list[str]:
    """`spark-submit` in cluster mode running `tablequeue pipeline ARGUMENTS` (e.g. `archive
    --to s3a://bucket/archive --older-than 30d`) in the job's image. The arguments may not
    carry the database URL (`--db`): it comes from the job's Secret."""
    for argument in arguments:
        if argument == "--db" or argument.startswith("--db="):
            raise InvalidInput(
                "the database URL of a Kubernetes job comes from its Secret "
                f"(database_secret {job.database_secret!r}): leave --db out of the arguments"
            )
    conf = [part for key, value in job.conf().items() for part in ("--conf", f"{key}={value}")]
    return [
        "spark-submit",
        "--master",
        f"k8s://{job.api_server}",
        "--deploy-mode",
        "cluster",
        "--name",
        job.name,
        *conf,
        IMAGE_MAIN,
        *arguments,
    ]
