"""A loopback TCP proxy the test controls: `cut()` drops every connection through it and refuses
new ones, as a broken network between a worker and its database would; `restore()` heals it."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator


class CuttableProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.open = threading.Event()
        self.open.set()
        self.cuts = 0
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            if not self.open.is_set():
                client.close()
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets |= {client, server}
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for end in (source, sink):
            self._drop(end)

    def _drop(self, end: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(end)
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)
        end.close()

    def cut(self) -> None:
        self.open.clear()
        self.cuts += 1
        with self._lock:
            ends = list(self._sockets)
        for end in ends:
            self._drop(end)

    def restore(self, target_port: int | None = None) -> None:
        """Accept connections again, to `target_port` if given (a failover's new primary)."""
        self.target_port = target_port or self.target_port
        self.open.set()

    def close(self) -> None:
        self.cut()
        self.listener.close()


@contextlib.contextmanager
def cuttable_proxy(target_port: int) -> Iterator[CuttableProxy]:
    proxy = CuttableProxy(target_port)
    try:
        yield proxy
    finally:
        proxy.close()
