"""`tablequeue dev`: the whole system on one machine, no server needed.

A SQLite database in a local folder, the example queues, one worker process per queue with the
example handlers, example messages (some fail, some are scheduled), and the API with the admin
UI, until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import uvicorn

from tablequeue import Database, connect
from tablequeue.api.app import create_app
from tablequeue.api.limits import MAX_REQUEST_HEAD_BYTES
from tablequeue.errors import InvalidInput

from .examples import dev_messages, dev_queues


def run(folder: Path, host: str, port: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".gitignore").write_text(
        "# Written by tablequeue dev: nothing here belongs in git.\n*\n"
    )
    db_url = f"sqlite:///{folder.resolve() / 'dev.db'}"
    with _listening(host, port) as listener, connect(db_url) as database:
        _seed(database)
        with _workers(database, db_url, folder):
            url = f"http://{host}:{port}"
            click.echo(f"tablequeue dev: database {db_url}")
            click.echo(f"tablequeue dev: admin UI at {url}/ui  (API docs at {url}/docs)")
            click.echo("tablequeue dev: Ctrl-C stops everything", err=True)
            # uvicorn re-raises SIGINT/SIGTERM after its graceful shutdown: turn them into
            # exceptions so the workers are stopped on the way out.
            signal.signal(signal.SIGTERM, _exit)
            with contextlib.suppress(KeyboardInterrupt, SystemExit):
                app = create_app(database, listen_host=host)
                config = uvicorn.Config(
                    app,
                    host=host,
                    port=port,
                    log_level="warning",
                    h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES,
                )
                uvicorn.Server(config).run(sockets=[listener])
    click.echo("tablequeue dev: stopped")


@contextlib.contextmanager
def _listening(host: str, port: int) -> Iterator[socket.socket]:
    """The API's socket, bound before anything starts: a taken port stops `dev` at once."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((host, port))
        except OSError as error:
            raise InvalidInput(
                f"cannot listen on {host}:{port}: {error.strerror} (is another tablequeue dev "
                "running? give another --port)"
            ) from None
        yield listener


def _exit(*_: object) -> None:
    raise SystemExit(0)


def _seed(database: Database) -> None:
    """Apply the example queues; enqueue the example messages into queues that are empty."""
    messages = dev_messages()
    for resource in dev_queues():
        database.apply(resource)
        queue = database.queue(resource.name)
        if queue.count() == 0:
            queue.enqueue_many(messages[resource.name])


@contextlib.contextmanager
def _workers(database: Database, db_url: str, folder: Path) -> Iterator[None]:
    processes = []
    for resource in dev_queues():
        handler = resource.spec.workers.handler.python
        log = (folder / f"worker-{resource.name}.log").open("ab")
        command = [
            sys.executable,
            "-m",
            "tablequeue.cli",
            "worker",
            resource.name,
            "--db",
            db_url,
            "--handler",
            f"python:{handler}",
            "--port",
            "0",
            "--sweep-interval",
            "5",
        ]
        processes.append((subprocess.Popen(command, stderr=log, stdout=log), log))
    try:
        yield
    finally:
        for process, _ in processes:
            process.terminate()
        for process, log in processes:
            try:
                process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                process.kill()
            log.close()
