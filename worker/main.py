"""Start a worker from its configuration: logs, database, handler, probe server, loop."""

from __future__ import annotations

import asyncio

from tablequeue.database import Database, connect
from tablequeue.errors import InvalidInput

from . import logs, server
from .config import WorkerConfig
from .handlers import HttpHandler, PythonHandler, load_handler
from .loop import Worker


def run(config: WorkerConfig) -> int:
    """Run one worker until SIGTERM (or idle, with `exit_when_idle`); returns the exit code."""
    logs.setup(config.log_level, config.queue)
    handler = load_handler(config.handler, config.handler_timeout)
    with connect(config.db) as database:
        return asyncio.run(_serve(config, database, handler))


async def _serve(
    config: WorkerConfig, database: Database, handler: HttpHandler | PythonHandler
) -> int:
    worker = Worker(config, database, handler)
    try:
        runner = await server.start(config.host, config.port, worker.alive, lambda: worker.ready)
    except OSError as error:  # port taken, address not ours: one clear line, exit 1
        raise InvalidInput(f"cannot serve /livez, /readyz, /metrics: {error.strerror}") from None
    try:
        return await worker.run()
    finally:
        await runner.cleanup()
