"""Servers a tenant could run against whoever connects to its database.

`RogueMariaDb`, a rogue MariaDB server: it greets every client, accepts any login,
and answers every query with a `LOAD DATA LOCAL INFILE` request for a file of its choosing (part
of the MySQL protocol: a client that allows local files sends the file's bytes back). It keeps
what clients sent and counts the connections, so a test can tell whether a client connected at
all and which file it gave away. `SilentServer` accepts connections, counts them and never says
a word.

The protocol (MariaDB's client/server protocol, "Protocol::HandshakeV10"): a packet is a 3-byte
little-endian length, a 1-byte sequence number and the payload.
"""

from __future__ import annotations

import socket
import struct
import threading
from types import TracebackType
from typing import Self

CLIENT_LONG_PASSWORD = 0x1
CLIENT_LOCAL_FILES = 0x80
CLIENT_PROTOCOL_41 = 0x200
CLIENT_TRANSACTIONS = 0x2000
CLIENT_SECURE_CONNECTION = 0x8000
CLIENT_PLUGIN_AUTH = 0x80000
CAPABILITIES = (
    CLIENT_LONG_PASSWORD
    | CLIENT_LOCAL_FILES
    | CLIENT_PROTOCOL_41
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_PLUGIN_AUTH
)
OK = b"\x00\x00\x00\x02\x00\x00\x00"
"""OK packet: no rows affected, no insert id, autocommit status, no warnings."""


def _packet(sequence: int, payload: bytes) -> bytes:
    return struct.pack("<I", len(payload))[:3] + bytes([sequence & 0xFF]) + payload


def _read_packet(connection: socket.socket) -> tuple[int, bytes]:
    header = _read_exactly(connection, 4)
    length = int.from_bytes(header[:3], "little")
    return header[3], _read_exactly(connection, length)


def _read_exactly(connection: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise ConnectionError("the client closed the connection")
        data += chunk
    return data


def _greeting() -> bytes:
    salt = b"abcdefgh" + b"ijklmnopqrst"
    return (
        b"\x0a"  # protocol version 10
        + b"5.5.5-10.11.6-MariaDB\x00"
        + struct.pack("<I", 7)  # connection id
        + salt[:8]
        + b"\x00"
        + struct.pack("<H", CAPABILITIES & 0xFFFF)
        + bytes([45])  # utf8mb4_general_ci
        + struct.pack("<H", 0x0002)  # autocommit
        + struct.pack("<H", CAPABILITIES >> 16)
        + bytes([21])  # length of the whole salt, with its NUL
        + b"\x00" * 6
        + b"\x00" * 4  # MariaDB's extended capabilities
        + salt[8:]
        + b"\x00"
        + b"mysql_native_password\x00"
    )


class LoopbackServer:
    """`with server:` accepts connections on a loopback port (`port`) until the block ends,
    counting them (`connections`) and handing each to `talk` on a thread of its own."""

    def __init__(self) -> None:
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name=type(self).__name__, daemon=True)

    def talk(self, connection: socket.socket) -> None:
        """What the server says on a connection; by default nothing, ever."""

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _error: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for connection in self._held:
            connection.close()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._held.append(connection)
            threading.Thread(target=self.talk, args=(connection,), daemon=True).start()


class SilentServer(LoopbackServer):
    """`with SilentServer() as silent:` a loopback port that accepts connections (counted in
    `connections`) and never answers, until the block ends."""


class RogueMariaDb(LoopbackServer):
    """`with RogueMariaDb(wanted_file) as rogue:` listens on a loopback port until the block ends;
    `rogue.url(query)` is a URL to it, `rogue.connections` how many clients connected and
    `rogue.received` the bytes of the files they sent."""

    def __init__(self, wanted_file: str) -> None:
        super().__init__()
        self.wanted_file = wanted_file
        self.received: list[bytes] = []

    def url(self, query: str = "") -> str:
        return f"mariadb://tenant:pw@127.0.0.1:{self.port}/tenant{query}"

    def talk(self, connection: socket.socket) -> None:
        connection.settimeout(10)
        try:
            connection.sendall(_packet(0, _greeting()))
            _read_packet(connection)  # the login: any is fine
            connection.sendall(_packet(2, OK))
            while not self._stop.is_set():
                _, command = _read_packet(connection)
                if command[:1] == b"\x01":  # quit
                    return
                # A ping, and the SETs a client sends as it connects (PyMySQL reads one
                # packet for those, not a result): OK.
                if command[:1] != b"\x03" or command[1:4].upper() == b"SET":
                    connection.sendall(_packet(1, OK))
                    continue
                connection.sendall(_packet(1, b"\xfb" + self.wanted_file.encode()))
                content, sequence = b"", 2
                while True:  # the file's bytes, then an empty packet; or an error
                    sequence, chunk = _read_packet(connection)
                    if not chunk:
                        break
                    content += chunk
                with self._lock:
                    self.received.append(content)
                connection.sendall(_packet(sequence + 1, OK))
        except (ConnectionError, TimeoutError, OSError):
            return
