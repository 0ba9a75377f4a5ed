"""A separate process that leases from a queue, for the multi-process conformance tests.

python -m tests.support.lifecycle_client drain URL QUEUE OUT_FILE BATCH
    lease and complete until the queue is empty; write leased ids, one per line
python -m tests.support.lifecycle_client hold URL QUEUE BATCH LEASE_SECONDS
    lease one batch, print its ids as one line, then wait to be killed
"""

from __future__ import annotations

import os
import sys
import time

from tablequeue import Completion, connect


def drain(url: str, queue_name: str, out_file: str, batch: int) -> None:
    with connect(url) as database:
        queue = database.queue(queue_name)
        owner = f"drain-{os.getpid()}"
        empty_in_a_row = 0
        with open(out_file, "w") as out:
            while empty_in_a_row < 3:
                leased = queue.lease(owner, batch).messages
                if not leased:
                    empty_in_a_row += 1
                    time.sleep(0.05)
                    continue
                empty_in_a_row = 0
                out.write("".join(f"{m.id}\n" for m in leased))
                queue.complete(owner, [Completion(m) for m in leased])


def hold(url: str, queue_name: str, batch: int, lease_seconds: float) -> None:
    with connect(url) as database:
        queue = database.queue(queue_name)
        leased = queue.lease(f"hold-{os.getpid()}", batch, lease_seconds=lease_seconds)
        print(" ".join(str(m.id) for m in leased.messages), flush=True)
        time.sleep(3600)


if __name__ == "__main__":
    verb, *args = sys.argv[1:]
    if verb == "drain":
        drain(args[0], args[1], args[2], int(args[3]))
    elif verb == "hold":
        hold(args[0], args[1], int(args[2]), float(args[3]))
    else:
        sys.exit(f"unknown verb {verb!r}")
