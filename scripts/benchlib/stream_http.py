"""Raw HTTP/1.1 for held event streams: a request's bytes, a response's head, its body's framing.

``scripts/bench sessions`` opens every held stream on a socket of its own
(:func:`open_stream`, on trio) rather than through httpx2, so that once a
session is open its socket can be handed to a watcher process
(:mod:`benchlib.session_watch`) that waits on thousands of them with epoll
and stamps the moment each ends. The end of a stream is where its body's
framing says (:class:`Body`): the last chunk (``0\\r\\n\\r\\n``) of a chunked
body, the last byte of a ``Content-Length`` one, or EOF. A body's decoding
state travels with the socket (:meth:`Body.state`), so the watcher picks up
the framing where the opener left it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs
import trio

__all__ = ["Body", "Head", "OpenStream", "open_stream", "parse_head", "request_bytes"]

# A response head or chunk-size line longer than this is not one.
_MAX_LINE = 16384
_RECV = 65536


def request_bytes(method: str, url: str, headers: Mapping[str, str], body: bytes = b"") -> bytes:
    """One HTTP/1.1 request to ``url`` (kept alive), ``Host`` and ``Content-Length`` added."""
    parts = urlsplit(url)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    lines = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@attrs.frozen
class Head:
    """A response's status line and headers (names lower-cased), and the bytes after them."""

    status: int
    headers: dict[str, str]
    rest: bytes


def parse_head(buffer: bytes) -> Head | None:
    """The head at the start of ``buffer``; None while it is incomplete.

    :raises ValueError: it is not an HTTP/1.x response head.
    """
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        if len(buffer) > _MAX_LINE:
            raise ValueError("no end to the response head")
        return None
    lines = buffer[:end].decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/1."):
        raise ValueError(f"not an HTTP/1.x response: {lines[0][:100]!r}")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Head(int(rest.split(" ", 1)[0]), headers, buffer[end + 4 :])


class Body:
    """A response body decoded as it arrives: chunked, of a known length, or up to EOF.

    :meth:`feed` returns the payload in the bytes given and sets ``done`` at
    the body's end; bytes after the end are ignored.
    """

    __slots__ = ("_left", "_line", "_skip", "_trailer", "done", "mode")

    def __init__(self, mode: str, left: int = 0) -> None:
        #: ``chunked``, ``length`` or ``close`` (the body ends with the connection).
        self.mode = mode
        self.done = mode == "length" and left == 0
        self._left = left  # bytes of the current chunk (or of the body) still to come
        self._skip = 0  # bytes of the CRLF after a chunk's data still to come
        self._line = b""  # a chunk-size (or trailer) line begun
        self._trailer = False  # past the last chunk, in its trailer

    @classmethod
    def for_head(cls, head: Head, method: str = "GET") -> Body:
        if method == "HEAD" or head.status in (204, 304) or 100 <= head.status < 200:
            return cls("length")
        if "chunked" in head.headers.get("transfer-encoding", "").lower():
            return cls("chunked")
        if "content-length" in head.headers:
            return cls("length", int(head.headers["content-length"]))
        return cls("close")

    def state(self) -> list[Any]:
        """What :meth:`from_state` needs to go on decoding (JSON-able)."""
        line = self._line.decode("latin-1")
        return [self.mode, self._left, self._skip, line, self._trailer, self.done]

    @classmethod
    def from_state(cls, state: list[Any]) -> Body:
        mode, left, skip, line, trailer, done = state
        body = cls(str(mode), int(left))
        body._skip, body._line = int(skip), str(line).encode("latin-1")
        body._trailer, body.done = bool(trailer), bool(done)
        return body

    def feed(self, data: bytes) -> bytes:
        """The payload in ``data``.

        :raises ValueError: a chunk-size line that is not one.
        """
        if self.done or not data:
            return b""
        if self.mode == "close":
            return data
        if self.mode == "length":
            payload = data[: self._left]
            self._left -= len(payload)
            self.done = self._left == 0
            return payload
        out = []
        i, size = 0, len(data)
        while i < size and not self.done:
            if self._left:
                taken = data[i : i + self._left]
                out.append(taken)
                i += len(taken)
                self._left -= len(taken)
                if not self._left:
                    self._skip = 2
            elif self._skip:
                taken_n = min(self._skip, size - i)
                i += taken_n
                self._skip -= taken_n
            else:
                newline = data.find(b"\n", i)
                if newline < 0:
                    self._line += data[i:]
                    if len(self._line) > _MAX_LINE:
                        raise ValueError("a chunk-size line without an end")
                    break
                line = (self._line + data[i:newline]).rstrip(b"\r")
                self._line = b""
                i = newline + 1
                if self._trailer:
                    self.done = not line
                    continue
                chunk = int(line.split(b";", 1)[0], 16)
                if chunk:
                    self._left = chunk
                else:
                    self._trailer = True
        return b"".join(out)


@attrs.define(eq=False)
class OpenStream:
    """A response being read on a socket of its own: its head, its body so far."""

    sock: trio.socket.SocketType
    head: Head
    body: Body
    #: Payload received and not read yet (the bytes that came with the head, at first).
    pending: bytes = b""
    #: Set once the connection closed.
    eof: bool = False

    async def receive(self) -> bytes:
        """The next payload that arrives; ``b""`` once the body (or the connection) ended."""
        if self.pending:
            payload, self.pending = self.pending, b""
            return payload
        while not self.body.done and not self.eof:
            data = await self.sock.recv(_RECV)
            if not data:
                self.eof = True
                break
            payload = self.body.feed(data)
            if payload:
                return payload
        return b""

    async def lines(self) -> AsyncGenerator[str, None]:
        """The payload's lines (UTF-8, without their line ends), as an SSE parser reads them."""
        partial = b""
        while payload := await self.receive():
            partial += payload
            *complete, partial = partial.split(b"\n")
            for line in complete:
                yield line.rstrip(b"\r").decode("utf-8", errors="replace")

    async def read_body(self, limit: int = 65536) -> bytes:
        """The rest of the body (at most ``limit`` bytes kept)."""
        kept = b""
        while payload := await self.receive():
            kept = (kept + payload)[:limit]
        return kept

    def close(self) -> None:
        self.sock.close()


async def open_stream(url: str, headers: Mapping[str, str]) -> OpenStream:
    """``GET url`` on a new connection; returns once the response's head has arrived.

    Whatever the status, the stream is returned: the caller reads an
    error's body with :meth:`OpenStream.read_body`.

    Resource handling:
        The caller owns the socket (:meth:`OpenStream.close`), unless this raises.

    :raises OSError: the connection failed or closed before a head arrived.
    :raises ValueError: what arrived is not an HTTP/1.x response head.
    """
    parts = urlsplit(url)
    sock = trio.socket.socket()
    try:
        await sock.connect((parts.hostname or "127.0.0.1", parts.port or 80))
        request = memoryview(request_bytes("GET", url, headers))
        while request:
            sent = await sock.send(request)
            request = request[sent:]
        buffer = b""
        head = None
        while head is None:
            data = await sock.recv(_RECV)
            if not data:
                raise ConnectionResetError("the connection closed before a response head")
            buffer += data
            head = parse_head(buffer)
        body = Body.for_head(head)
        return OpenStream(sock, head, body, body.feed(head.rest))
    except BaseException:
        sock.close()
        raise
