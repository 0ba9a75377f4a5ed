"""A Queue's archive on a schedule (`spec.archive`): the operator keeps a CronJob that runs the
pipeline's `archive` for the queue (finished messages older than `olderThan` to Parquet, then
out of the table), in the pipeline image, with the database URL from the Queue's Secret."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import AfterValidator, Field, field_validator, model_validator

from .. import names
from ..durations import Duration
from .base import FREE_FORM, SpecModel
from .schedule import CronExpression, TimeZone

ArchivedStatus = Annotated[
    str,
    AfterValidator(names.settable_status),
    Field(json_schema_extra={"pattern": names.STATUS.pattern}),
]
CLAIM_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"


class PersistentVolumeClaimRef(SpecModel):
    claim_name: str = Field(
        pattern=CLAIM_NAME_PATTERN,
        max_length=253,
        description="PersistentVolumeClaim in the Queue's namespace, mounted at /archive",
    )


class ArchiveDestination(SpecModel):
    """Exactly one of `url` or `persistentVolumeClaim`."""

    url: str | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description="Archive root: s3a://bucket/path, hdfs://..., or a path in the image",
    )
    persistent_volume_claim: PersistentVolumeClaimRef | None = Field(
        None, description="A volume claim mounted at /archive, the archive root"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> ArchiveDestination:
        if (self.url is None) == (self.persistent_volume_claim is None):
            raise ValueError("set exactly one of url or persistentVolumeClaim")
        return self


class ArchiveSpec(SpecModel):
    """The pipeline's `archive` for this queue, run by a CronJob (concurrencyPolicy Forbid)."""

    schedule: CronExpression = Field(
        description="When it runs: 5 fields (minute hour day-of-month month day-of-week) or "
        "@daily etc., as spec.schedules"
    )
    time_zone: TimeZone = Field("UTC", description="IANA time zone the schedule reads")
    destination: ArchiveDestination = Field(description="Where the Parquet files go")
    older_than: Duration = Field(
        timedelta(days=7),
        json_schema_extra={"default": "7d"},
        description="Archive messages finished longer ago than this (archive --older-than)",
    )
    statuses: list[ArchivedStatus] = Field(
        default_factory=list,
        max_length=32,
        description="Statuses to archive (archive --status); default Processed, Error, "
        "Cancelled, Expired",
    )
    image: str | None = Field(
        None, min_length=1, description="Pipeline image; default: the operator's --archive-image"
    )
    resources: dict[str, Any] | None = Field(
        None,
        json_schema_extra=FREE_FORM,
        description="Resources of the archive container (requests, limits); default: requests "
        "1 CPU and 1536Mi, limit 2Gi",
    )
    env: list[dict[str, Any]] = Field(
        default_factory=list,
        max_length=64,
        json_schema_extra={"items": {"type": "object", **FREE_FORM}},
        description="Extra environment variables (EnvVar), e.g. s3a credentials from a Secret",
    )
    spark_conf: dict[str, str] = Field(
        default_factory=dict,
        json_schema_extra=FREE_FORM,
        description="Spark settings (archive --conf), e.g. spark.hadoop.fs.s3a.endpoint",
    )
    keep_successful_jobs: int = Field(
        3, ge=0, le=100, description="Finished Jobs kept (the CronJob's history limit)"
    )
    keep_failed_jobs: int = Field(1, ge=0, le=100, description="Failed Jobs kept")
    suspend: bool = Field(False, description="Start no Job while true")

    @field_validator("older_than")
    @classmethod
    def _finite(cls, value: timedelta | None) -> timedelta | None:
        if value is None:
            raise ValueError("olderThan forever archives nothing: give a duration such as 30d")
        return value

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for item in env:
            name = item.get("name")
            if not isinstance(name, str) or not name:
                raise ValueError(f"env: every variable needs a name, got {item!r}"[:200])
            if name == "TABLEQUEUE_DB":
                raise ValueError("env: TABLEQUEUE_DB comes from spec.database.secretRef")
        return env
