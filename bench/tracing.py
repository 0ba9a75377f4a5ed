"""What tracing and log correlation cost the worker: drain N messages, tracing off (and on).

    .venv/bin/python -m bench.tracing [--messages 20000] [--repeats 5] [--base /path/to/python]

Each round pre-enqueues N messages into a fresh SQLite file, runs `tablequeue worker
--exit-when-idle` (the async no-op handler, batch 100, concurrency 4) and measures the wall time
of the drain and the worker's CPU time per message. `--base` names the Python of another
checkout (e.g. one of `main` before this change): its worker runs alternately with this one, so
the machine's noise spreads over both. `--traced` adds a round with tracing on, exporting OTLP
over HTTP to a collector that accepts and drops everything. Writes nothing: prints a table.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tablequeue import NewMessage, connect
from tablequeue.spec import QueueResource

HANDLER = "python:tablequeue.examples:noop_async"


@contextlib.contextmanager
def sink() -> Iterator[str]:
    """An OTLP/HTTP endpoint that answers 200 to everything."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def drain(python: str, messages: int, env: dict[str, str]) -> tuple[float, float]:
    """(seconds, worker CPU µs per message) of one drain."""
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/bench.db"
        with connect(url) as database:
            database.apply(
                QueueResource.model_validate(
                    {"metadata": {"name": "bench"}, "spec": {"keepProcessedFor": "0s"}}
                )
            )
            queue = database.queue("bench")
            for start in range(0, messages, 1000):
                queue.enqueue_many(
                    [NewMessage(message={"n": i}) for i in range(start, start + 1000)]
                )
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        subprocess.run(
            [
                python,
                "-m",
                "tablequeue",
                "worker",
                "bench",
                "--db",
                url,
                "--handler",
                HANDLER,
                "--batch-size",
                "100",
                "--concurrency",
                "4",
                "--port",
                "0",
                "--exit-when-idle",
                "--log-level",
                "WARNING",
            ],
            check=True,
            cwd="/",
            env=env,
            timeout=600,
        )
        seconds = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        with connect(url) as database:
            assert database.queue("bench").count() == 0
        return seconds, cpu / messages * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--base", help="the Python of the checkout to compare with")
    parser.add_argument("--traced", action="store_true", help="also a round with tracing on")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TABLEQUEUE_", "OTEL_"))}
    with sink() as endpoint:
        runs: dict[str, tuple[str, dict[str, str]]] = {"this, tracing off": (sys.executable, env)}
        if args.base:
            runs = {"base": (args.base, env), **runs}
        if args.traced:
            traced = env | {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
            runs["this, tracing on (OTLP)"] = (sys.executable, traced)
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        for _ in range(args.repeats):
            for name, (python, run_env) in runs.items():
                results[name].append(drain(python, args.messages, run_env))
    print(
        f"{args.messages:,} messages, SQLite, {HANDLER}, batch 100, concurrency 4; "
        f"median of {args.repeats} [min, max]"
    )
    print("| worker | messages/s | worker CPU µs/msg |\n|---|--:|--:|")
    for name, figures in results.items():
        rates = [args.messages / seconds for seconds, _ in figures]
        cpus = [cpu for _, cpu in figures]
        print(
            f"| {name} | {statistics.median(rates):,.0f} [{min(rates):,.0f}, {max(rates):,.0f}] "
            f"| {statistics.median(cpus):.0f} [{min(cpus):.0f}, {max(cpus):.0f}] |"
        )


if __name__ == "__main__":
    main()
