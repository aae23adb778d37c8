"""Keeper frames over a container's attach socket, with monotonic deadlines.

Two layers: the engine multiplexes a non-tty container's output into records of an 8-byte header
(stream type: 1 stdout, 2 stderr; 3 zero bytes; big-endian length) plus payload -- only stdout is
ours; inside stdout, the keeper speaks 1 byte kind + 4-byte big-endian length + payload. Input to the
container is raw (no multiplexing), so host->keeper frames are written as they are.
"""

from __future__ import annotations

import select
import socket
import struct
import time

STDOUT = 1
KEEPER_HEADER = 5
ENGINE_HEADER = 8
MAX_FRAME = 64 * 1024 * 1024


class StreamClosed(ConnectionError):
    """The container's output ended (the keeper or the container is gone)."""


class StreamError(RuntimeError):
    """The bytes on the socket are not what the engine and the keeper send."""


def frame(kind: bytes, payload: bytes = b"") -> bytes:
    return kind + struct.pack(">I", len(payload)) + payload


class KeeperStream:
    def __init__(self, sock) -> None:
        # docker-py hands back a SocketIO (or a socket); select and sendall need the socket itself.
        self.sock: socket.socket = getattr(sock, "_sock", sock)
        self._owner = sock  # keeps the HTTP response (and so the connection) alive
        self.sock.setblocking(False)
        self._poll = select.poll()  # one poll object, not a select() list per wait
        self._poll.register(self.sock.fileno(), select.POLLIN)
        self.raw = bytearray()  # engine-multiplexed bytes not yet split
        self.out = bytearray()  # the keeper's stdout, demultiplexed
        self.closed = False

    # -- sending -------------------------------------------------------------------------------
    def send(self, kind: bytes, payload: bytes, deadline: float) -> None:
        data = frame(kind, payload)
        try:  # the socket is nearly always writable: try first, wait only when it is full
            n = self.sock.send(data)
        except BlockingIOError:
            n = 0
        if n == len(data):
            return
        view = memoryview(data)[n:]
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            _, ready, _ = select.select([], [self.sock], [], remaining)
            if not ready:
                raise TimeoutError
            try:
                n = self.sock.send(view)
            except BlockingIOError:
                continue
            view = view[n:]

    def idle_ok(self) -> bool:
        """Between executions nothing may be waiting: readable now means closed (or out of step)."""
        if self.closed or self.raw or self.out:
            return False
        ready, _, _ = select.select([self.sock], [], [], 0)
        if ready:
            self.closed = True
            return False
        return True

    # -- receiving -----------------------------------------------------------------------------
    def _fill(self, deadline: float) -> None:
        if self.closed:
            raise StreamClosed("container output closed")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        if not self._poll.poll(remaining * 1000 + 1):
            if time.monotonic() >= deadline:
                raise TimeoutError
            return
        try:
            data = self.sock.recv(1 << 18)
        except BlockingIOError:
            return
        except OSError as exc:
            self.closed = True
            raise StreamClosed(f"container output closed: {exc}") from None
        if not data:
            self.closed = True
            raise StreamClosed("container output closed")
        self.raw += data
        self._demux()

    def _demux(self) -> None:
        while len(self.raw) >= ENGINE_HEADER:
            kind = self.raw[0]
            (size,) = struct.unpack(">I", self.raw[4:8])
            if kind not in (0, 1, 2) or self.raw[1:4] != b"\0\0\0":
                raise StreamError(f"not an engine stream record (header {bytes(self.raw[:8])!r})")
            if len(self.raw) < ENGINE_HEADER + size:
                return
            if kind == STDOUT:
                self.out += self.raw[ENGINE_HEADER : ENGINE_HEADER + size]
            del self.raw[: ENGINE_HEADER + size]

    def recv(self, deadline: float) -> tuple[bytes, bytes]:
        """The next keeper frame (kind, payload); TimeoutError past deadline, StreamClosed at EOF."""
        while True:
            if len(self.out) >= KEEPER_HEADER:
                (size,) = struct.unpack(">I", self.out[1:5])
                if size > MAX_FRAME:
                    raise StreamError(f"keeper frame of {size} bytes")
                if len(self.out) >= KEEPER_HEADER + size:
                    kind = bytes(self.out[:1])
                    payload = bytes(self.out[KEEPER_HEADER : KEEPER_HEADER + size])
                    del self.out[: KEEPER_HEADER + size]
                    return kind, payload
            self._fill(deadline)

    def close(self) -> None:
        self.closed = True
        for thing in (self.sock, self._owner):
            try:
                thing.close()
            except OSError:
                pass
