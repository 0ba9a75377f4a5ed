"""The steady-state latency workload of bench.peers (one producer at a fixed rate, one worker,
enqueue-to-handler-start latency, CPU per message) for `tablequeue worker` alone, on a fresh
throwaway PostgreSQL for each run: the A/B tool for the worker's wake-ups.

    .venv/bin/python -m bench.latency [--rate 500] [--seconds 20] [--repeats 1] [--label NAME]

Prints one JSON line per run. bench.peers runs the same workload after its drains, once the
server they left busy is quiet again (before it waited, its p99 was 48-58 ms on 2026-11-29
where a fresh server gave 3-4).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bench.cpu import postmaster_pid
from bench.peers_workloads import latency
from bench.systems.tq import TableQueueWorker
from tests.support.postgres_server import postgres_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=500.0, help="messages/s enqueued")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--label", default="", help="printed with each run (the variant)")
    args = parser.parse_args()
    for _ in range(args.repeats):
        with postgres_server() as server:
            system = TableQueueWorker(server.url)
            system.server_pid = postmaster_pid(server.data)
            tmp = Path(tempfile.mkdtemp(prefix="tablequeue-latency-"))
            row = latency(system, args.rate, args.seconds, tmp)
            system.close()
        print(json.dumps({"label": args.label, "rate": args.rate} | row), flush=True)


if __name__ == "__main__":
    main()
