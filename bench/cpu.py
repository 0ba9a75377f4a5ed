"""CPU seconds per message: the client's and the database server's, read from /proc.

The client is what a system runs on its side of the connection: the consumer processes of a
drain (each with its children), pgbench (a child of this process, counted once it is reaped)
or this process itself (the enqueue workloads call the system in-process). The server is the
database's process tree: PostgreSQL's postmaster and every backend, the backends that exited
in between included (the postmaster reaps them, so their CPU lands in its children's times).

    meter = Meter(server_pid, clients=[p.pid for p in procs])
    ... the work ...
    row |= meter.per_message(messages)   # {"client_cpu_us": ..., "server_cpu_us": ...}

CPU is the figure that travels across machines: a wall-clock rate on a shared 2-core box moves
with whatever else runs, the CPU a message costs hardly does.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Sequence
from pathlib import Path

from bench.worker import tree_cpu_seconds


def postmaster_pid(data: Path) -> int:
    """The postmaster of a PostgreSQL data folder (first line of postmaster.pid)."""
    return int((data / "postmaster.pid").read_text().split()[0])


class Meter:
    """CPU of the client and of the server from now until `per_message()`.

    `clients`: process ids whose trees are the client (alive at the end); empty means the
    children this process reaps meanwhile (pgbench, consumers that exit on their own), plus
    this process itself (all its threads) if `own`. `server`: the database's root process,
    None for SQLite (the database runs inside the client)."""

    def __init__(self, server: int | None, clients: Sequence[int] = (), own: bool = True) -> None:
        self.server, self.clients, self.own = server, list(clients), own
        self.began = self._client(), self._server()

    def _client(self) -> float:
        if self.clients:
            return sum(tree_cpu_seconds(pid) for pid in self.clients)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (time.process_time() if self.own else 0.0) + children.ru_utime + children.ru_stime

    def _server(self) -> float | None:
        return tree_cpu_seconds(self.server) if self.server else None

    def per_message(self, messages: int) -> dict[str, float]:
        """Microseconds of CPU per message since the meter started: client, server."""
        client, server = self._client(), self._server()
        if messages <= 0:
            return {}
        out = {"client_cpu_us": (client - self.began[0]) / messages * 1e6}
        if server is not None and self.began[1] is not None:
            out["server_cpu_us"] = (server - self.began[1]) / messages * 1e6
        return out


def wait_until_quiet(
    server: int | None, busiest: float = 0.05, window: float = 0.5, longest: float = 120.0
) -> float:
    """Wait until the database's process tree used less than `busiest` of a core over `window`
    seconds (autovacuum, checkpoints, backends of the workload before), at most `longest`
    seconds; the seconds waited. A latency measured on a server still busy with the previous
    workload says more about that workload than about the system measured."""
    if server is None:
        return 0.0
    began = time.monotonic()
    while time.monotonic() - began < longest:
        before = tree_cpu_seconds(server)
        time.sleep(window)
        if tree_cpu_seconds(server) - before < busiest * window:
            break
    return time.monotonic() - began
