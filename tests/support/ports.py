"""Loopback ports for the throwaway servers a test starts.

Handed out below the kernel's ephemeral range (32768-60999 by default, see
/proc/sys/net/ipv4/ip_local_port_range), so that no outgoing connection of this machine holds one
by chance, and from a slice of its own for each pytest-xdist worker (`gw0`, `gw1`, ...), so that
two workers never hand out the same port between one's check and its server's bind. A port that
is taken (bound by anything) is passed over.
"""

from __future__ import annotations

import os
import random
import socket

FIRST_PORT = 10000
SLICE = 2500
"""Ports per xdist worker: gw0 gets 10000-12499, gw1 12500-14999, ... up to 8 workers."""
WORKER_SLICES = 8

_handed_out: set[int] = set()


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else 0
    if index >= WORKER_SLICES:
        raise RuntimeError(f"more than {WORKER_SLICES} pytest-xdist workers: widen ports.py")
    return index


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port nothing listens on now, never one handed out before in this process.

    The walk through the slice starts at a random place: two test runs side by side on one
    machine (two checkouts) then collide no more often than the kernel's own choice would.
    """
    start = FIRST_PORT + _worker_index() * SLICE
    offset = random.randrange(SLICE)
    for step in range(SLICE):
        port = start + (offset + step) % SLICE
        if port not in _handed_out and _bindable(port):
            _handed_out.add(port)
            return port
    raise RuntimeError(f"no free port left in {start}-{start + SLICE - 1}")
