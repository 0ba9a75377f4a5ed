"""Every code block of README.md, CONTRIBUTING.md and the documentation site (docs/, and the files
its pages include with `--8<--`) is run or checked here; a block no rule covers fails
`test_every_block_is_covered`, so nothing is skipped silently.

- ```python: the blocks of a page run in order in one namespace, in a temporary folder, against
  a SQLite database there (the placeholder URLs `postgresql://app@db/app` and
  `postgresql+psycopg://app@db/app` are replaced by the test's database); the queues of
  `examples/queue.yaml` (without its PostgreSQL database) and the page's own Queue YAML blocks
  are applied first. A page marked
  `<!-- snippet: postgresql -->` runs against a throwaway PostgreSQL instead. A block marked
  `<!-- snippet: file NAME -->` is written to NAME in that folder (a module the page's shell
  commands run).
- ```yaml: every document is a Queue (or a fragment `spec: ...` of one), validated by the spec
  models and applied to a SQLite database (which checks schedules and index paths too).
- ```sh: run in order in the page's temporary folder: `tablequeue ...` through the CLI against
  the test's SQLite database (any `--db` URL or `TABLEQUEUE_DB` is replaced by it),
  `curl localhost:8000/...` against the API application, `python FILE`. A block marked
  `<!-- snippet: covered-by PATH ... -->` (helm, kubectl, spark-submit, long-running processes)
  is not run: each of its commands must appear in those files, an existing test that runs them
  (its program, subcommands and every option; what none runs is listed in UNTESTED, with why);
  `tablequeue` command lines are parsed by the CLI, and helm's `--set` keys must be in the
  chart's values schema. A block marked `<!-- snippet: run-by PATH -->` is run as written by
  that test (README's Helm install, on the test node).
- ```json: parsed. ```sql: the ready-made SQL of docs/guides/operating.md, run on every engine
  by tests/core/test_readme_sql.py (checked here to be exactly its snippets).
- ```dockerfile: every instruction is a Dockerfile instruction. ```text and ```mermaid are
  output, trees and diagrams, not code; but the tree of docs/internals/layout.md names only
  modules and folders that exist.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
import pytest
import yaml
from click.testing import CliRunner
from fastapi.testclient import TestClient

from tablequeue import Database, connect
from tablequeue.api.app import create_app
from tablequeue.cli import main
from tablequeue.spec import API_VERSION, QueueResource, load_queue_file, load_queues
from tests.support.doc_blocks import Block, blocks

from . import test_readme_sql

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDER_URLS = ("postgresql://app@db/app", "postgresql+psycopg://app@db/app")
NOT_CODE = {"text", "mermaid"}
RUN_SH_PROGRAMS = {"tablequeue", "curl", "python", "export"}
LONG_RUNNING = {"api", "dev", "operator", "pipeline"}  # and `worker` without --exit-when-idle
_INCLUDE = re.compile(r'^--8<-- "([^"]+)"$', re.M)
_DOCKERFILE = {
    "FROM", "RUN", "COPY", "ADD", "ENV", "ARG", "USER", "WORKDIR", "ENTRYPOINT", "CMD",
    "LABEL", "EXPOSE", "VOLUME", "SHELL", "HEALTHCHECK", "STOPSIGNAL", "ONBUILD",
}  # fmt: skip


def pages() -> list[str]:
    """README.md, CONTRIBUTING.md, every page of docs/ and the files they include."""
    found = ["README.md", "CONTRIBUTING.md"]
    for page in sorted((ROOT / "docs").rglob("*.md")):
        found.append(str(page.relative_to(ROOT)))
        found += _INCLUDE.findall(page.read_text())
    return list(dict.fromkeys(found))


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def pages_with(language: str) -> list[str]:
    return [page for page in pages() if any(b.language == language for b in blocks(page))]


def test_the_site_and_its_pages_are_found() -> None:
    assert "docs/guides/operating.md" in pages()
    assert "charts/tablequeue/README.md" in pages()  # included by docs/reference/helm-chart.md
    assert len(all_blocks()) > 40


def test_every_block_is_covered() -> None:
    """Each block's language has a rule below; a marker names a rule that exists."""
    known = {"python", "yaml", "sh", "json", "sql", "dockerfile", *NOT_CODE}
    for block in all_blocks():
        assert block.language in known, f"{block}: no test covers this kind of block"
        kind = block.marker.split(" ")[0]
        allowed = {"python": {"", "postgresql", "file"}, "sh": {"", "covered-by", "run-by"}}
        assert kind in allowed.get(block.language, {""}), f"{block}: unknown marker {kind!r}"


# --- SQL, JSON, Dockerfile ------------------------------------------------------------------


def test_sql_blocks_are_the_ready_made_sql_tested_on_every_engine() -> None:
    sql = [b for b in all_blocks() if b.language == "sql"]
    assert {b.page for b in sql} == {test_readme_sql.PAGE.relative_to(ROOT).as_posix()}
    found = test_readme_sql.snippets()
    assert sum(len(questions) for questions in found.values()) == len(sql)


@pytest.mark.parametrize("block", [b for b in all_blocks() if b.language == "json"], ids=str)
def test_json_blocks_parse(block: Block) -> None:
    json.loads(block.code)


@pytest.mark.parametrize("block", [b for b in all_blocks() if b.language == "dockerfile"], ids=str)
def test_dockerfile_blocks_are_instructions(block: Block) -> None:
    logical = block.code.replace("\\\n", " ").splitlines()
    for line in logical:
        if line.strip() and not line.startswith("#"):
            assert line.split()[0] in _DOCKERFILE, f"{block}: {line}"


def test_the_layout_names_modules_and_folders_that_exist() -> None:
    (tree,) = [b for b in blocks("docs/internals/layout.md") if b.language == "text"]
    code_folders = ["tablequeue", "worker", "api", "operator", "pipeline", "cli"]
    modules = {p.name for folder in code_folders for p in (ROOT / folder).rglob("*.py")}
    folders = {p.name for folder in code_folders for p in (ROOT / folder).rglob("*") if p.is_dir()}
    names = re.findall(r"(?<![\w/.])([a-z_]+(?:\.py|/))(?=[\s,;:)]|$)", tree.code, re.M)
    assert len(names) > 30
    for name in names:
        if name.endswith(".py"):
            assert name in modules, f"{tree}: no module {name}"
        else:
            assert name[:-1] in folders | set(code_folders), f"{tree}: no folder {name}"
    # ... and names every module and package of the core's top level.
    top_level = {
        p.name + ("/" if p.is_dir() else "")
        for p in (ROOT / "tablequeue").iterdir()
        if (p.suffix == ".py" and p.stem not in {"__init__", "__main__"})
        or (p / "__init__.py").exists()
    }
    assert top_level - set(names) == set(), f"{tree}: the core's top level is not all named"


# --- YAML -------------------------------------------------------------------------------------


def queue_resources(code: str, where: str) -> list[QueueResource]:
    """The Queues of a YAML block; a fragment (`spec: ...` alone) completed with a name."""
    documents = [d for d in yaml.safe_load_all(code) if d is not None]
    if all(set(d) == {"spec"} for d in documents):
        code = yaml.safe_dump_all(
            {"apiVersion": API_VERSION, "kind": "Queue", "metadata": {"name": f"fragment-{i}"}} | d
            for i, d in enumerate(documents)
        )
    return load_queues(code, where)


@pytest.mark.parametrize("block", [b for b in all_blocks() if b.language == "yaml"], ids=str)
def test_yaml_blocks_are_valid_queues_that_apply(block: Block, tmp_path: Path) -> None:
    resources = queue_resources(block.code, str(block))
    assert resources, f"{block}: no Queue in it"
    with connect(f"sqlite:///{tmp_path / 'yaml.db'}") as database:
        for resource in resources:
            assert database.apply(resource) == "created", str(block)


# --- Python -----------------------------------------------------------------------------------


def prepare(database: Database, page: str, extra: tuple[str, ...] = ()) -> None:
    """The queues a page's snippets use: send-order-confirmation (examples/queue.yaml's, less
    its PostgreSQL database), the page's own Queue blocks, and `extra`."""
    example = load_queue_file(ROOT / "examples" / "queue.yaml")[0]
    spec = example.spec.model_copy(update={"database": None})
    database.apply(example.model_copy(update={"spec": spec}))
    for block in blocks(page):
        if block.language == "yaml" and "kind: Queue" in block.code:
            for resource in queue_resources(block.code, str(block)):
                database.apply(resource)
    for name in extra:
        database.apply(QueueResource.from_name(name))


def with_url(code: str, url: str) -> str:
    sqlalchemy_url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    return code.replace(PLACEHOLDER_URLS[1], sqlalchemy_url).replace(PLACEHOLDER_URLS[0], url)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path


def run_python_page(page: str, url: str, folder: Path) -> None:
    with connect(url) as database:
        prepare(database, page)
    namespace: dict[str, Any] = {"__name__": f"docs_{Path(page).stem}"}
    for block in blocks(page):
        if block.language != "python":
            continue
        code = with_url(block.code, url)
        if block.marker.startswith("file "):
            (folder / block.marker.split(" ", 1)[1]).write_text(code)
            continue
        exec(compile(code, str(block), "exec"), namespace)


PYTHON_PAGES = pages_with("python")
POSTGRES_PAGES = [p for p in PYTHON_PAGES if any(b.marker == "postgresql" for b in blocks(p))]


@pytest.mark.parametrize("page", [p for p in PYTHON_PAGES if p not in POSTGRES_PAGES])
def test_python_blocks_run_on_sqlite(page: str, in_tmp: Path) -> None:
    run_python_page(page, f"sqlite:///{in_tmp / 'docs.db'}", in_tmp)


@pytest.mark.parametrize("page", POSTGRES_PAGES)
def test_python_blocks_run_on_postgresql(page: str, postgres_url: str, in_tmp: Path) -> None:
    run_python_page(page, postgres_url, in_tmp)


# --- shell ------------------------------------------------------------------------------------


def commands(code: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments and blank lines out;
    `a && b` is two commands."""
    found = []
    for line in code.replace("\\\n", " ").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            found += [part.strip() for part in line.split(" && ")]
    return found


def words(command: str) -> list[str]:
    return shlex.split(command, comments=True)


def program(command: str) -> tuple[str, list[str]]:
    """The program of a command (after `VAR=value` prefixes) and its arguments."""
    parts = words(command)
    while parts and re.match(r"^[A-Z_]+=", parts[0]):
        parts.pop(0)
    return Path(parts[0]).name, parts[1:]


def needs_mapping(command: str) -> bool:
    name, arguments = program(command)
    if name not in RUN_SH_PROGRAMS:
        return True
    if name == "curl":  # the API's examples run; anything else (a worker's URL) is mapped
        return not any(a.startswith("localhost:8000/") for a in arguments)
    if name == "tablequeue" and arguments:
        if arguments[0] in LONG_RUNNING:
            return True
        if arguments[0] == "worker" and "--exit-when-idle" not in arguments:
            return True
    return False


def significant(command: str) -> list[str]:
    """What a covering test must contain: the program, its subcommands (the plain words before
    the first option) and every option; for `curl` (a test speaks HTTP with a client, not
    curl), the JSON keys it sends. (`tablequeue` commands: see `parse`.)"""
    name, arguments = program(command)
    if name in ("export", "cd"):  # set what the commands after them read, and where
        return []
    found = [] if name in ("tablequeue", "curl") else [name]
    word = r"[a-z][a-z-]*" if name == "tablequeue" else r"[a-z]+"  # not names like orders-db
    options = False
    for argument in arguments:
        if argument.startswith("-"):
            options = True
            if name not in ("tablequeue", "curl"):
                found.append(argument.split("=", 1)[0])
        elif not options and re.fullmatch(word, argument):
            found.append(argument)
    if name == "curl" and "-d" in arguments:
        found += [f'"{key}"' for key in json.loads(arguments[arguments.index("-d") + 1])]
    return found


SH_BLOCKS = [b for b in all_blocks() if b.language == "sh"]


def test_shell_commands_that_cannot_run_here_are_mapped() -> None:
    for block in SH_BLOCKS:
        if not block.marker:
            for command in commands(block.code):
                assert not needs_mapping(command), (
                    f"{block}: {command!r} cannot run here: mark the block"
                    " `<!-- snippet: covered-by TEST_FILE -->` with the test that runs it"
                )


# What the documentation shows that no test here runs, each with why; the test fails when one
# is no longer missing (take it out) or something else is (cover it, or add it with a reason).
UNTESTED = {
    "--from-literal": "kubectl create secret: README's block runs as written on the test node"
    " (run-by); for the other pages the tests create the same Secrets (a `url` key) through the"
    " API server (tests/support/kube/fixtures.py, secret())",
    "generic": "kubectl create secret generic: as --from-literal",
    "--reuse-values": "helm upgrade --reuse-values: the chart tests upgrade with explicit values",
    "-o": "pip-compile (below)",
    "pip-compile": "regenerating the lock files needs the network; tests/deploy/test_packaging.py"
    " checks the committed locks",
    "--generate-hashes": "pip-compile (above)",
    "--strip-extras": "pip-compile (above)",
    "--allow-unsafe": "pip-compile (above)",
    "--no-emit-index-url": "pip-compile (above)",
    "--no-emit-find-links": "pip-compile (above)",
    "--extra": "pip-compile (above)",
}


def parse(arguments: list[str]) -> list[str]:
    """Parse a `tablequeue` command line as the CLI would, without running it (every option
    exists and its value has the right type); the names of its (sub)commands."""
    command: click.Command = main
    context = command.make_context("tablequeue", list(arguments))
    names = []
    while isinstance(command, click.Group):
        name, sub, rest = command.resolve_command(context, _group_tokens(context))
        assert name is not None and sub is not None, f"no command in {arguments}"
        names.append(name)
        command = sub
        context = command.make_context(name, rest, parent=context)
    return names


def _group_tokens(context: click.Context) -> list[str]:
    """What follows a group's own options: Click 8 keeps the subcommand's name apart, in
    `protected_args` (deprecated: Click 9 puts everything in `args`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return [*context.protected_args, *context.args]


def assert_chart_value(key: str, where: str) -> None:
    """A `--set` key is a property of the chart's values schema (values.schema.json)."""
    schema = json.loads((ROOT / "charts" / "tablequeue" / "values.schema.json").read_text())
    for part in key.split("."):
        properties = schema.get("properties", {})
        assert part in properties, f"{where}: --set {key}: no {part!r} in the values schema"
        schema = properties[part]


def test_mapped_shell_blocks_are_in_the_tests_that_run_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TABLEQUEUE_DB", "sqlite:///docs.db")
    untested: set[str] = set()
    for block in [b for b in SH_BLOCKS if b.marker.startswith("covered-by")]:
        paths = block.marker.split()[1:]
        assert paths, f"{block}: covered-by names no file"
        source = "\n".join((ROOT / path).read_text() for path in paths)
        for command in commands(block.code):
            name, arguments = program(command)
            required = significant(command)
            if name == "tablequeue":
                required = parse(arguments)
            elif name == "spark-submit":
                script = next(i for i, a in enumerate(arguments) if a.endswith("__main__.py"))
                parse(["pipeline", *arguments[script + 1 :]])
                required = significant(" ".join(map(shlex.quote, arguments[: script + 1])))
                required[0] = "spark-submit"
            if name == "helm":
                for key in [arguments[i + 1] for i, a in enumerate(arguments) if a == "--set"]:
                    assert_chart_value(key.split("=", 1)[0], str(block))
            missing = {word for word in required if word not in source}
            assert missing <= set(UNTESTED), f"{block}: {command!r}: {missing} not in {paths}"
            untested |= missing
    assert untested == set(UNTESTED), (
        f"now covered, take out of UNTESTED: {set(UNTESTED) - untested}"
    )


def test_blocks_run_as_written_name_the_test_that_runs_them() -> None:
    """`run-by PATH`: that test runs the block itself, as written (doc_blocks finds it there)."""
    for block in [b for b in SH_BLOCKS if b.marker.startswith("run-by")]:
        (path,) = block.marker.split()[1:]
        source = (ROOT / path).read_text()
        assert block.page in source and "doc_blocks" in source, f"{block}: {path} does not run it"


class Shell:
    """Runs a page's commands against one SQLite database, in the page's folder."""

    def __init__(self, folder: Path, database: Database, url: str) -> None:
        self.folder, self.database, self.url = folder, database, url
        self.env: dict[str, str] = {"TABLEQUEUE_DB": url}
        self.client = TestClient(create_app(database))
        self.tracking_id = str(
            database.queue("send-order-confirmation").enqueue({"OrderId": "T-1"}).tracking_id
        )

    def run(self, command: str, where: str) -> None:
        assert not needs_mapping(command), f"{where}: cannot run here (see the test above)"
        name, arguments = program(command)
        arguments = [os.path.expandvars(a) for a in arguments]
        if name == "export":
            key, _, value = arguments[0].partition("=")
            self.env[key] = self.url if key == "TABLEQUEUE_DB" else value
        elif name == "tablequeue":
            self.tablequeue(arguments, where)
        elif name == "curl":
            self.curl(arguments, where)
        elif name == "python":
            done = subprocess.run([sys.executable, *arguments], cwd=self.folder, check=False)
            assert done.returncode == 0, where

    def tablequeue(self, arguments: list[str], where: str) -> None:
        if "--db" in arguments and not arguments[arguments.index("--db") + 1].startswith("sqlite"):
            arguments[arguments.index("--db") + 1] = self.url  # a server's URL: the test's SQLite
        if arguments[0] == "worker":  # a process of its own, as deployed
            env = os.environ | self.env | {"TABLEQUEUE_PORT": "0", "PYTHONPATH": str(self.folder)}
            command = [str(Path(sys.executable).parent / "tablequeue"), *arguments]
            done = subprocess.run(command, cwd=self.folder, env=env, timeout=120, check=False)
            assert done.returncode == 0, where
            url = arguments[arguments.index("--db") + 1] if "--db" in arguments else self.url
            with connect(url) as database:  # it processed every message, none failed
                queue = database.queue(arguments[1])  # `worker QUEUE ...`
                assert queue.messages() == [], f"{where}: {queue.messages()}"
            return
        result = CliRunner().invoke(main, arguments, env=self.env, catch_exceptions=False)
        assert result.exit_code == 0, f"{where}: {result.output}"

    def curl(self, arguments: list[str], where: str) -> None:
        method, headers, data, url = "GET", {}, None, ""
        items = iter(arguments)
        for argument in items:
            if argument == "-X":
                method = next(items)
            elif argument == "-H":
                key, _, value = next(items).partition(":")
                headers[key.strip()] = value.strip()
            elif argument == "-d":
                data = next(items)
            else:
                url = argument
        parts = urlsplit("http://" + url.replace("TRACKING-ID", self.tracking_id))
        assert parts.netloc == "localhost:8000", f"{where}: {url}"
        if headers.get("Authorization", "").strip() == "Bearer":
            del headers["Authorization"]  # no token given: the test's API has none either
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        response = self.client.request(method, path, headers=headers, content=data)
        assert response.status_code < 400, f"{where}: {method} {path}: {response.text}"


def _sh_page(page: str) -> Any:
    """A page's shell test; slow when it starts a worker process."""
    run = [b for b in blocks(page) if b in SH_BLOCKS and not b.marker]
    slow = any("tablequeue worker" in b.code for b in run)
    return pytest.param(page, marks=[pytest.mark.slow] if slow else [], id=page) if run else None


SH_PAGES = [param for param in map(_sh_page, pages()) if param is not None]


@pytest.mark.parametrize("page", SH_PAGES)
def test_shell_blocks_run(page: str, in_tmp: Path) -> None:
    url = f"sqlite:///{in_tmp / 'docs.db'}"
    with connect(url) as database:
        prepare(database, page, extra=("orders",))
        for block in blocks(page):
            if block.language == "python" and block.marker.startswith("file "):
                name = block.marker.split(" ", 1)[1]
                (in_tmp / name).write_text(with_url(block.code, url))
        shell = Shell(in_tmp, database, url)
        for block in blocks(page):
            if block.language == "sh" and not block.marker:
                for command in commands(block.code):
                    shell.run(command, f"{block}: {command}")
