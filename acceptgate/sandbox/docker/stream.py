"""Keeper frames between the host and a container's keeper, with monotonic deadlines.

Two channels carry them. On an engine on this machine, a unix socket the host listened on in a
directory it bind-mounted into the container (``pool.SocketChannel``): the frames go straight from the
harness to the keeper, and a start frame carries the runner's two pipes (the calls and answers then
never pass the keeper). Else
the container's attach socket, through the engine: the engine multiplexes a non-tty container's output
into records of an 8-byte header (stream type: 1 stdout, 2 stderr; 3 zero bytes; big-endian length)
plus payload -- only stdout is ours -- and passes input raw. Inside either, the keeper speaks 1 byte
kind + 4-byte big-endian length + payload.
"""

from __future__ import annotations

import os
import select
import socket
import struct
import time

from acceptgate.sandbox.backend import READ_CHUNK

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
    """Frames over ``read_fd`` (the keeper's output) and ``write_fd`` (its input): the attach socket's
    one descriptor twice, with ``demux`` (the engine's records), or the keeper's socket's, twice.
    ``owner`` is closed with the stream (the attach's HTTP response, which keeps the connection alive;
    the socket)."""

    def __init__(self, read_fd: int, write_fd: int, *, demux: bool, owner=None) -> None:
        self.read_fd, self.write_fd, self.demux = read_fd, write_fd, demux
        self._owner = owner
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self._poll = select.poll()  # one poll object, not a select() list per wait
        self._poll.register(read_fd, select.POLLIN)
        self.raw = bytearray()  # engine-multiplexed bytes not yet split
        self.out = bytearray()  # the keeper's output, demultiplexed
        self.closed = False

    @classmethod
    def attach(cls, sock) -> "KeeperStream":
        # docker-py hands back a SocketIO (or a socket); its socket's descriptor is the channel.
        inner = getattr(sock, "_sock", sock)
        return cls(inner.fileno(), inner.fileno(), demux=True, owner=(inner, sock))

    @classmethod
    def over_socket(cls, conn: socket.socket) -> "KeeperStream":
        stream = cls(conn.fileno(), conn.fileno(), demux=False, owner=(conn,))
        stream.passes_descriptors = True
        return stream

    passes_descriptors = False  # only the socket can carry the runner's pipes (send's fds)

    # -- sending -------------------------------------------------------------------------------
    def send(self, kind: bytes, payload: bytes, deadline: float, fds: tuple[int, ...] = ()) -> None:
        """One frame; ``fds`` (the socket only) go with its first byte (SCM_RIGHTS)."""
        view = memoryview(frame(kind, payload))
        while True:
            try:  # the channel is nearly always writable: try first, wait only when it is full
                if fds:
                    n = socket.send_fds(self._owner[0], [view], list(fds))
                    fds = ()  # sent with what went
                else:
                    n = os.write(self.write_fd, view)
            except BlockingIOError:
                n = 0
            except OSError as exc:  # EPIPE: the keeper is gone
                self.closed = True
                raise StreamClosed(f"container input closed: {exc}") from None
            view = view[n:]
            if not view:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([], [self.write_fd], [], remaining)[1]:
                raise TimeoutError

    def idle_ok(self) -> bool:
        """Between executions nothing may be waiting: readable now means closed (or out of step)."""
        if self.closed or self.raw or self.out:
            return False
        if self._poll.poll(0):
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
            data = os.read(self.read_fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError as exc:
            self.closed = True
            raise StreamClosed(f"container output closed: {exc}") from None
        if not data:
            self.closed = True
            raise StreamClosed("container output closed")
        if self.demux:
            self.raw += data
            self._demux()
        else:
            self.out += data

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
        if self.read_fd < 0:
            return
        self.closed = True
        if self._owner is not None:  # the attach socket: closed through its objects, not the bare fd
            for thing in self._owner:
                try:
                    thing.close()
                except OSError:
                    pass
        else:
            for fd in {self.read_fd, self.write_fd}:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.read_fd = self.write_fd = -1
