"""Start a worker from its configuration: logs, tracing, database, handler, server, loop."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING

from aiohttp import web

from tablequeue import Database, connect, listen_url
from tablequeue.errors import InvalidInput
from tablequeue.spec import WorkerSpec

from . import drain, logs, otel, server
from .config import WorkerConfig
from .handlers import HttpHandler, PythonHandler, load_handler
from .loop import Worker
from .progress_route import ROUTE

if TYPE_CHECKING:
    from .tracing import Tracing


def run(config: WorkerConfig) -> int:
    """Run one worker until SIGTERM (or idle, with `exit_when_idle`); returns the exit code."""
    logs.setup(config.log_level, config.queue)
    provider = otel.provider_from_environment(config.queue)
    try:
        handler = load_handler(config.handler, config.handler_timeout)
        traced = otel.tracing_for(provider, config.queue)  # the handler's module may set one
        with connect(config.db) as database:
            if config.listen_db:
                listen_url(config.listen_db, database.dialect)  # InvalidInput: exit 1 now
            return asyncio.run(serve(config, database, handler, traced))
    finally:
        if provider is not None:
            provider.shutdown()  # exports the spans still buffered


async def serve(
    config: WorkerConfig,
    database: Database,
    handler: HttpHandler | PythonHandler,
    traced: Tracing | None = None,
) -> int:
    """Serve the probes, metrics, /drained and progress route, and run the worker until it
    stops; the server stops only once the pending /drained requests, and the app containers'
    hooks it expects, are answered."""
    worker = Worker(config, database, handler, traced)
    drained = drain.DrainRoute(worker.drained, lambda: _grace_period(config))
    routes = [web.get(drain.ROUTE, drained.get)]
    # One progress mechanism per handler kind: the route for HTTP handlers, the context's
    # `report_progress` for Python handlers.
    if isinstance(handler, HttpHandler):
        routes.append(web.post(ROUTE, worker.progress.post))
    try:
        runner = await server.start(config.host, config.port, worker.alive, worker.unready, routes)
    except OSError as error:  # port taken, address not ours: one clear line, exit 1
        raise InvalidInput(
            f"cannot serve /livez, /readyz, /metrics, /progress: {error.strerror}"
        ) from None
    if isinstance(handler, HttpHandler):
        worker.progress.base_url = _progress_url(config.host, runner)
        handler.progress_url = worker.progress.url_for
    try:
        code = await worker.run()
    finally:
        worker.drained.set()  # also when it stopped early, or failed
        await drained.answered(expected=config.prestop_hooks)
        await runner.cleanup()
    if worker.cut_short:
        # Threads still wait on the database (a paused server may never answer): the
        # interpreter would wait for them at exit, so the process ends here.
        logging.shutdown()
        os._exit(code)
    return code


def _grace_period(config: WorkerConfig) -> float:
    """The grace period in seconds: the queue's default until the worker has read its queue."""
    if config.grace_period is not None:
        return config.grace_period
    return float(WorkerSpec.model_fields["grace_period_seconds"].default)


def _progress_url(host: str, runner: web.AppRunner) -> str:
    """The progress route as the app reaches it: on loopback unless the worker serves one
    address only."""
    port = runner.addresses[0][1]
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/progress/"
