"""The worker's options are defined once (`WorkerSettings`); the `tablequeue worker` flags, the
TABLEQUEUE_* variables and the operator's sidecar environment derived from it must agree."""

from __future__ import annotations

from typing import Any

import click
import pytest
from click.testing import CliRunner

from tablequeue.cli import main
from tablequeue.operator.builders import worker_environment
from tablequeue.settings.worker import WorkerSettings, env_name, environment
from tablequeue.spec import QueueResource
from tablequeue.worker import WorkerConfig

# A valid value for every option, as text, that differs from its default.
SAMPLES = {
    "queue": "orders",
    "handler": "python:shop.jobs:send",
    "handler_timeout": "12.5",
    "batch_size": "7",
    "concurrency": "3",
    "lease_seconds": "45.0",
    "execution_timeout": "60.0",
    "poll_min": "0.25",
    "poll_max": "2.0",
    "grace_period": "10.0",
    "app_readiness_path": "/healthz",
    "prestop_hooks": "2",
    "sweep_interval": "5.0",
    "purge_interval": "20.0",
    "keep_audit_days": "30",
    "heartbeat_interval": "2.5",
    "schedule_interval": "2.5",
    "vacuum_interval": "4.0",
    "rollup_interval": "7.0",
    "listen": "false",
    "listen_db": "postgresql://tq@db:5432/queues",
    "host": "127.0.0.1",
    "port": "9191",
    "owner": "from-env",
    "exit_when_idle": "true",
    "log_level": "DEBUG",
    "db": "sqlite:///queues.db",
}
PARSED: dict[str, Any] = SAMPLES | {
    "handler_timeout": 12.5,
    "batch_size": 7,
    "concurrency": 3,
    "lease_seconds": 45.0,
    "execution_timeout": 60.0,
    "poll_min": 0.25,
    "poll_max": 2.0,
    "grace_period": 10.0,
    "prestop_hooks": 2,
    "sweep_interval": 5.0,
    "purge_interval": 20.0,
    "keep_audit_days": 30.0,
    "heartbeat_interval": 2.5,
    "schedule_interval": 2.5,
    "vacuum_interval": 4.0,
    "rollup_interval": 7.0,
    "listen": False,
    "port": 9191,
    "exit_when_idle": True,
}


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for field in WorkerSettings.model_fields:
        monkeypatch.delenv(env_name(field), raising=False)
    return monkeypatch


def worker_command() -> click.Command:
    command = main.get_command(click.Context(main), "worker")
    assert command is not None
    return command


@pytest.fixture
def started(clean_environment: pytest.MonkeyPatch) -> list[WorkerSettings]:
    """The settings `tablequeue worker` starts workers with (none is started)."""
    runs: list[WorkerSettings] = []

    def run(settings: WorkerSettings) -> int:
        runs.append(settings)
        return 0

    clean_environment.setattr("tablequeue.worker.main.run", run)
    return runs


def test_every_option_has_a_sample_that_is_not_its_default() -> None:
    assert set(SAMPLES) == set(WorkerSettings.model_fields)
    defaults = WorkerSettings.model_construct()
    assert [f for f in PARSED if getattr(defaults, f, None) == PARSED[f]] == []


def test_env_names_are_the_documented_ones() -> None:
    assert env_name("batch_size") == "TABLEQUEUE_BATCH_SIZE"
    assert env_name("db") == "TABLEQUEUE_DB"
    with pytest.raises(KeyError, match="no option 'batches'"):
        env_name("batches")


def test_every_field_is_a_worker_flag_read_from_its_variable() -> None:
    params = {p.name: p for p in worker_command().params}
    params.pop("help", None)
    params.pop("queue_option")  # the deprecated --queue, read into the argument's field
    assert set(params) == set(WorkerSettings.model_fields)
    queue = params.pop("queue")
    assert isinstance(queue, click.Argument) and queue.envvar == env_name("queue")
    for field, info in WorkerSettings.model_fields.items():
        if field == "queue":
            continue
        option = params[field]
        assert option.envvar == env_name(field)
        assert f"--{field.replace('_', '-')}" in option.opts
        assert option.required == info.is_required()
        assert option.help == info.description


def test_every_variable_is_read_by_the_worker_config(
    clean_environment: pytest.MonkeyPatch,
) -> None:
    for field, text in SAMPLES.items():
        clean_environment.setenv(env_name(field), text)
    config = WorkerConfig()  # every field from the environment
    assert config.model_dump() == PARSED


def test_the_worker_command_passes_every_variable_to_the_worker(
    started: list[WorkerSettings],
) -> None:
    env = {env_name(field): text for field, text in SAMPLES.items()}
    result = CliRunner().invoke(main, ["worker"], env=env)
    assert result.exit_code == 0, result.output
    [settings] = started
    assert settings.model_dump() == PARSED


def test_flags_win_over_variables_and_unset_options_stay_for_the_queue(
    started: list[WorkerSettings],
) -> None:
    env = {"TABLEQUEUE_QUEUE": "orders", "TABLEQUEUE_CONCURRENCY": "3", "TABLEQUEUE_OWNER": ""}
    args = ["worker", "--handler", "python:a:b", "--db", "sqlite://", "--concurrency", "5"]
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    [settings] = started
    assert (settings.queue, settings.concurrency, settings.batch_size) == ("orders", 5, None)
    assert settings.owner  # an empty variable counts as unset: a generated name
    assert settings.log_level == "INFO" and settings.port == 9090


@pytest.mark.parametrize(
    "handler",
    [
        {"python": "shop.jobs:send"},
        {"http": {"port": 8081, "path": "/jobs", "timeout_seconds": 12}},
    ],
)
def test_the_operators_sidecar_sets_only_worker_options(
    clean_environment: pytest.MonkeyPatch, handler: dict[str, Any]
) -> None:
    spec = QueueResource.from_name(
        "orders",
        database={"secret_ref": {"name": "orders-db"}},
        workers={"handler": handler, "batch_size": 20, "concurrency": 8},
    ).spec
    env = worker_environment("orders", spec)
    known = {env_name(field) for field in WorkerSettings.model_fields}
    assert {e["name"] for e in env} - {"POD_NAME"} <= known  # and the pod's name, for heartbeats
    for entry in env:
        clean_environment.setenv(entry["name"], entry.get("value", "sqlite://"))
    settings = WorkerSettings()  # as the sidecar starts: no flags
    assert (settings.queue, settings.batch_size, settings.concurrency) == ("orders", 20, 8)
    assert settings.port == 9090 and settings.grace_period == spec.workers.grace_period_seconds


def test_environment_refuses_names_the_worker_does_not_know() -> None:
    assert environment({"batch_size": 3, "listen": False}) == {
        "TABLEQUEUE_BATCH_SIZE": "3",
        "TABLEQUEUE_LISTEN": "False",
    }
    with pytest.raises(KeyError):
        environment({"batches": 3})
