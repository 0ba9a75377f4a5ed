"""`tablequeue api` and `tablequeue operator` read their options from settings models, as the
worker does: each field a flag and one or more TABLEQUEUE_* variables, a flag winning over its
variable, a bad value refused in one error naming the variable (or flag) it came from. The chart
passes only flags and variables the models know."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import httpx
import pydantic
import pytest
from click.testing import CliRunner, Result

from tablequeue.cli import main
from tablequeue.settings import api as api_settings
from tablequeue.settings import operator as operator_settings
from tablequeue.settings.api import ApiSettings
from tablequeue.settings.operator import OperatorSettings
from tablequeue.spec import OPERATOR_MAX_REPLICAS
from tests.support.ports import free_port
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
MODELS: dict[str, tuple[type[Any], Callable[[str], tuple[str, ...]]]] = {
    "api": (ApiSettings, api_settings.env_names),
    "operator": (OperatorSettings, operator_settings.env_names),
}


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for model, names in MODELS.values():
        for field in model.model_fields:
            for variable in names(field):
                monkeypatch.delenv(variable, raising=False)
    return monkeypatch


@pytest.fixture
def api_started(clean: pytest.MonkeyPatch) -> list[ApiSettings]:
    import tablequeue.api.main

    started: list[ApiSettings] = []
    clean.setattr(tablequeue.api.main, "run", started.append)
    return started


@pytest.fixture
def operator_started(clean: pytest.MonkeyPatch) -> list[OperatorSettings]:
    import tablequeue.operator.main

    started: list[OperatorSettings] = []
    clean.setattr(tablequeue.operator.main, "run", started.append)
    return started


def invoke(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, args, env=env)


def command(name: str) -> click.Command:
    found = main.get_command(click.Context(main), name)
    assert found is not None
    return found


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_field_is_a_documented_flag_read_from_its_variables(name: str) -> None:
    model, names = MODELS[name]
    options = {p.name: p for p in command(name).params if isinstance(p, click.Option)}
    assert set(options) == set(model.model_fields)
    for field, info in model.model_fields.items():
        assert info.description, f"{name}: {field} has no description"
        option = options[field]
        assert option.help == info.description
        envvar = [option.envvar] if isinstance(option.envvar, str) else option.envvar
        assert tuple(envvar or ()) == names(field)
        assert all(variable.startswith("TABLEQUEUE_") for variable in names(field))


def test_api_defaults(api_started: list[ApiSettings]) -> None:
    result = invoke(["api", "--db", "sqlite:///q.db"])
    assert result.exit_code == 0, result.output
    [settings] = api_started
    assert settings.model_dump() == {
        "db": "sqlite:///q.db",
        "databases": (),
        "host": "127.0.0.1",
        "port": 8000,
        "admin_token": None,
        "read_token": None,
    }
    assert settings.database_urls() == {"default": "sqlite:///q.db"}


def test_api_serves_named_databases_from_flags_or_the_variable(
    api_started: list[ApiSettings],
) -> None:
    flags = ["--database", "billing=sqlite:///b.db", "--database", "eu-2=postgresql://h/q?x=1"]
    variable = {"TABLEQUEUE_API_DATABASES": "billing=sqlite:///b.db  eu-2=postgresql://h/q?x=1"}
    assert invoke(["api", "--db", "sqlite:///q.db", *flags]).exit_code == 0
    assert invoke(["api", "--db", "sqlite:///q.db"], variable).exit_code == 0
    expected = {
        "default": "sqlite:///q.db",
        "billing": "sqlite:///b.db",
        "eu-2": "postgresql://h/q?x=1",
    }
    assert [s.database_urls() for s in api_started] == [expected, expected]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("Billing=sqlite://", "database name 'Billing': lower-case letters, digits and -"),
        ("9b=sqlite://", "database name '9b': lower-case letters"),
        ("sqlite:///b.db", "each database is NAME=URL: one has no NAME= before its URL"),
        ("billing=", "each database is NAME=URL"),
        ("default=sqlite://", "database name 'default' is --db's"),
    ],
)
def test_api_refuses_a_bad_database_entry(
    api_started: list[ApiSettings], entry: str, problem: str
) -> None:
    result = invoke(["api", "--db", "sqlite://", "--database", entry])
    assert result.exit_code != 0
    assert problem in result.output
    assert "--database" in result.output
    assert api_started == []


def test_api_refuses_a_database_name_given_twice(api_started: list[ApiSettings]) -> None:
    twice = {"TABLEQUEUE_API_DATABASES": "b=sqlite:///1.db b=sqlite:///2.db"}
    result = invoke(["api", "--db", "sqlite://"], twice)
    assert result.exit_code != 0
    assert "database name 'b' is given twice" in result.output
    assert api_started == []


def test_api_reads_every_option_from_the_environment(api_started: list[ApiSettings]) -> None:
    env = {
        "TABLEQUEUE_DB": "sqlite:///env.db",
        "TABLEQUEUE_API_DATABASES": "b=sqlite:///b.db",
        "TABLEQUEUE_HOST": "0.0.0.0",
        "TABLEQUEUE_PORT": "9191",  # ignored before ApiSettings
        "TABLEQUEUE_API_ADMIN_TOKEN": "admin-secret",
        "TABLEQUEUE_API_READ_TOKEN": "read-secret",
    }
    result = invoke(["api"], env)
    assert result.exit_code == 0, result.output
    assert api_started[0].model_dump() == {
        "db": "sqlite:///env.db",
        "databases": ("b=sqlite:///b.db",),
        "host": "0.0.0.0",
        "port": 9191,
        "admin_token": "admin-secret",
        "read_token": "read-secret",
    }


def test_api_own_variables_win_over_the_shared_ones(api_started: list[ApiSettings]) -> None:
    env = {
        "TABLEQUEUE_DB": "sqlite://",
        "TABLEQUEUE_PORT": "9191",
        "TABLEQUEUE_API_PORT": "9292",
        "TABLEQUEUE_HOST": "0.0.0.0",
        "TABLEQUEUE_API_HOST": "127.0.0.2",
    }
    assert invoke(["api"], env).exit_code == 0
    assert (api_started[0].port, api_started[0].host) == (9292, "127.0.0.2")


def test_api_flags_win_over_the_environment(api_started: list[ApiSettings]) -> None:
    env = {
        "TABLEQUEUE_DB": "sqlite:///env.db",
        "TABLEQUEUE_PORT": "9191",
        "TABLEQUEUE_API_PORT": "9292",
        "TABLEQUEUE_API_ADMIN_TOKEN": "from-env",
    }
    args = ["api", "--db", "sqlite:///flag.db", "--port", "8001", "--admin-token", "from-flag"]
    result = invoke(args, env)
    assert result.exit_code == 0, result.output
    [settings] = api_started
    assert (settings.db, settings.port, settings.admin_token) == (
        "sqlite:///flag.db",
        8001,
        "from-flag",
    )


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--port", "70000"], {}, "'--port'"),
        ([], {"TABLEQUEUE_PORT": "70000"}, "--port (from TABLEQUEUE_PORT)"),
        ([], {"TABLEQUEUE_API_PORT": "http"}, "--port (from TABLEQUEUE_API_PORT)"),
    ],
)
def test_api_bad_values_name_their_flag_or_variable(
    api_started: list[ApiSettings], args: list[str], env: dict[str, str], named: str
) -> None:
    result = invoke(["api", "--db", "sqlite://", *args], env)
    assert result.exit_code == 2
    assert f"Error: Invalid value for {named}: " in result.output
    assert api_started == []


def test_api_needs_a_database(api_started: list[ApiSettings]) -> None:
    result = invoke(["api"])
    assert result.exit_code == 2
    assert "Missing option '--db'" in result.output


def test_operator_defaults(operator_started: list[OperatorSettings]) -> None:
    result = invoke(["operator"])
    assert result.exit_code == 0, result.output
    [settings] = operator_started
    assert settings.model_dump() == {
        "namespaces": (),
        "worker_image": "tablequeue/worker:0.1.0",
        "interval": 10.0,
        "metrics_port": 9090,
        "liveness_port": 8080,
        "max_replicas": OPERATOR_MAX_REPLICAS,
        "allow_sqlite": False,
        "standalone": True,
        "archive_image": "tablequeue/pipeline:0.1.0",
    }


def test_operator_reads_every_option_from_the_environment(
    operator_started: list[OperatorSettings],
) -> None:
    env = {
        "TABLEQUEUE_NAMESPACES": "shop billing,mail",
        "TABLEQUEUE_WORKER_IMAGE": "registry.example/tq/worker:2",
        "TABLEQUEUE_OPERATOR_INTERVAL": "2.5",
        "TABLEQUEUE_METRICS_PORT": "9191",
        "TABLEQUEUE_LIVENESS_PORT": "8181",
        "TABLEQUEUE_OPERATOR_MAX_REPLICAS": "20",
        "TABLEQUEUE_OPERATOR_ALLOW_SQLITE": "true",
        "TABLEQUEUE_OPERATOR_STANDALONE": "false",
        "TABLEQUEUE_ARCHIVE_IMAGE": "registry.example/tq/pipeline:2",
    }
    result = invoke(["operator"], env)
    assert result.exit_code == 0, result.output
    assert operator_started[0].model_dump() == {
        "namespaces": ("shop", "billing", "mail"),
        "worker_image": "registry.example/tq/worker:2",
        "interval": 2.5,
        "metrics_port": 9191,
        "liveness_port": 8181,
        "max_replicas": 20,
        "allow_sqlite": True,
        "standalone": False,
        "archive_image": "registry.example/tq/pipeline:2",
    }


def test_operator_flags_win_over_the_environment(
    operator_started: list[OperatorSettings],
) -> None:
    env = {
        "TABLEQUEUE_NAMESPACES": "shop",
        "TABLEQUEUE_OPERATOR_INTERVAL": "2.5",
        "TABLEQUEUE_OPERATOR_ALLOW_SQLITE": "true",
        "TABLEQUEUE_OPERATOR_STANDALONE": "true",
    }
    args = [
        "operator",
        "--namespace=billing",
        "--namespace=mail",
        "--interval=3",
        "--refuse-sqlite",
        "--peering",
    ]
    result = invoke(args, env)
    assert result.exit_code == 0, result.output
    [settings] = operator_started
    assert settings.namespaces == ("billing", "mail")
    assert (settings.interval, settings.allow_sqlite, settings.standalone) == (3.0, False, False)


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--interval", "0.1"], {}, "'--interval'"),
        (
            [],
            {"TABLEQUEUE_OPERATOR_INTERVAL": "0.1"},
            "--interval (from TABLEQUEUE_OPERATOR_INTERVAL)",
        ),
        ([], {"TABLEQUEUE_METRICS_PORT": "0"}, "--metrics-port (from TABLEQUEUE_METRICS_PORT)"),
        (
            [],
            {"TABLEQUEUE_OPERATOR_MAX_REPLICAS": "5000"},
            "--max-replicas (from TABLEQUEUE_OPERATOR_MAX_REPLICAS)",
        ),
        (
            [],
            {"TABLEQUEUE_OPERATOR_ALLOW_SQLITE": "maybe"},
            "--allow-sqlite (from TABLEQUEUE_OPERATOR_ALLOW_SQLITE)",
        ),
    ],
)
def test_operator_bad_values_name_their_flag_or_variable(
    operator_started: list[OperatorSettings], args: list[str], env: dict[str, str], named: str
) -> None:
    result = invoke(["operator", *args], env)
    assert result.exit_code == 2, result.output
    assert f"Error: Invalid value for {named}: " in result.output
    assert operator_started == []


def test_the_models_read_the_environment_themselves(clean: pytest.MonkeyPatch) -> None:
    """Without the CLI (e.g. a test or an embedding app), the same variables and bounds."""
    clean.setenv("TABLEQUEUE_DB", "sqlite://")
    clean.setenv("TABLEQUEUE_PORT", "9191")
    clean.setenv("TABLEQUEUE_NAMESPACES", "a, b")
    assert ApiSettings().port == 9191
    assert ApiSettings(port=8001).port == 8001  # a keyword wins, as a flag does
    assert OperatorSettings().namespaces == ("a", "b")
    clean.setenv("TABLEQUEUE_OPERATOR_INTERVAL", "0.1")
    with pytest.raises(pydantic.ValidationError, match=r"greater than or equal to 0\.5"):
        OperatorSettings()


def _chart(template: str) -> str:
    return (ROOT / "charts" / "tablequeue" / "templates" / template).read_text()


@pytest.mark.parametrize(
    ("name", "template"), [("api", "api.yaml"), ("operator", "operator-deployment.yaml")]
)
def test_the_chart_passes_only_options_the_models_know(name: str, template: str) -> None:
    text = _chart(template)
    model, names = MODELS[name]
    known_variables = {v for field in model.model_fields for v in names(field)}
    used_variables = set(re.findall(r"name: (TABLEQUEUE_[A-Z_]+)", text))
    assert used_variables <= known_variables
    flags = {
        opt.split("=")[0]
        for param in command(name).params
        for opt in [*param.opts, *getattr(param, "secondary_opts", [])]
    }
    used_flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", text))
    assert used_flags and used_flags <= flags


def test_a_value_the_model_refuses_names_the_flag_and_variables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Past click's own checks (types, ranges), the model's: one line, flag and variables."""
    from tablequeue.cli.processes import settings

    with pytest.raises(SystemExit) as exited:
        settings(ApiSettings, api_settings.env_names, "api", {"db": "sqlite://", "port": 0})
    assert exited.value.code == 1
    assert capsys.readouterr().err == (
        "error: invalid api option: --port (TABLEQUEUE_API_PORT or TABLEQUEUE_PORT): "
        "Input should be greater than or equal to 1\n"
    )


def test_a_refused_value_names_the_flag_a_user_types(capsys: pytest.CaptureFixture[str]) -> None:
    """`--namespace` (one a flag), not the field's name `namespaces`."""
    from tablequeue.cli.processes import OPERATOR_FLAGS, settings

    with pytest.raises(SystemExit):
        settings(
            OperatorSettings,
            operator_settings.env_names,
            "operator",
            {"namespaces": 5},
            OPERATOR_FLAGS,
        )
    assert capsys.readouterr().err.startswith(
        "error: invalid operator option: --namespace (TABLEQUEUE_NAMESPACES): "
    )


@pytest.mark.slow
def test_tablequeue_api_listens_on_tablequeue_port(tmp_path: Path) -> None:
    """The bug this fixed, as users met it: `TABLEQUEUE_PORT` set (the worker image sets it)
    and `tablequeue api` listening on 8000 anyway."""
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "TABLEQUEUE_DB": f"sqlite:///{tmp_path / 'q.db'}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "tablequeue", "api"],
        env=env | {"TABLEQUEUE_PORT": str(port)},
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def answers() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/livez", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        assert wait_until(answers, timeout=60)
    finally:
        process.terminate()
        process.wait(timeout=30)
