"""A load client's HTTP/1.1 over raw keep-alive sockets, parsed by httptools.

On two cores the load generator shares the CPU with the server it
measures: what the client spends per call is taken from the server, and a
client as costly as the server compresses every server's figures toward
the same value. httpx2 costs the ``mcp`` load client about a third of a
core at 500 calls/s (its request and response objects, its pool, its
header handling). :class:`RawClient` stands where the load's
``httpx2.AsyncClient`` does (``post`` and ``delete``, the parts of a
response :mod:`benchlib.mcp_client` and :mod:`benchlib.modern` read) and
does only this: the request's bytes written whole, the answer parsed by
httptools (C), a connection per worker kept alive. Only plain ``http://``
URLs; a ``Connection: close`` answer or a closed connection ends that
connection, and the next request opens a new one.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httptools
import trio

__all__ = ["CONNECTION_NOTE", "TRANSPORT_ERRORS", "RawClient", "RawResponse"]

_READ = 65536
# Bound on closing a connection that failed (a plain socket's close does not wait).
_CLOSE_S = 1.0

#: How the reports describe a load worker's connection.
CONNECTION_NOTE = (
    "a keep-alive HTTP/1.1 connection of its own (raw sockets, answers parsed by "
    "httptools: `benchlib/raw_http.py`)"
)

#: What a request over :class:`RawClient` raises when the connection or the answer fails.
TRANSPORT_ERRORS: tuple[type[Exception], ...] = (
    OSError,
    trio.BrokenResourceError,
    trio.ClosedResourceError,
    httptools.HttpParserError,
)


class RawResponse:
    """What the load reads of an answer: its status, its headers (lowercased names), its body."""

    __slots__ = ("content", "headers", "status_code")

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content

    @property
    def text(self) -> str:
        return self.content.decode(errors="replace")


class _Answer:
    """httptools' callbacks for one answer at a time on a connection."""

    __slots__ = ("body", "done", "headers", "keep_alive", "parser")

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.headers: dict[str, str] = {}
        self.body: list[bytes] = []
        self.done = False
        self.keep_alive = True

    def reset(self) -> None:
        self.headers = {}
        self.body = []
        self.done = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.done = True
        self.keep_alive = self.parser.should_keep_alive()


class _Connection:
    __slots__ = ("answer", "stream")

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.answer = _Answer()


class RawClient:
    """POSTs and DELETEs over keep-alive connections to one ``http://host:port``."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise ValueError(f"RawClient speaks plain http://host:port only, not {url!r}")
        self._host, self._port = parts.hostname, parts.port
        self._netloc = parts.netloc
        self._authority = f"{parts.hostname}:{parts.port}".encode()
        self._targets: dict[str, bytes] = {}
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()

    async def post(self, url: str, *, content: bytes, headers: dict[str, str]) -> RawResponse:
        return await self._request(b"POST", url, headers, content)

    async def delete(self, url: str, *, headers: dict[str, str]) -> RawResponse:
        return await self._request(b"DELETE", url, headers, b"")

    async def _request(
        self, method: bytes, url: str, headers: dict[str, str], body: bytes
    ) -> RawResponse:
        head = [method, b" ", self._target(url), b" HTTP/1.1\r\nhost: ", self._authority, b"\r\n"]
        for name, value in headers.items():
            head += [name.encode(), b": ", value.encode(), b"\r\n"]
        head += [b"content-length: ", str(len(body)).encode(), b"\r\n\r\n", body]
        connection = self._idle.pop() if self._idle else await self._connect()
        try:
            response = await self._exchange(connection, b"".join(head))
        except BaseException:
            self._open.discard(connection)
            with trio.move_on_after(_CLOSE_S, shield=True):
                await connection.stream.aclose()
            raise
        if connection.answer.keep_alive:
            self._idle.append(connection)
        else:
            self._open.discard(connection)
            await connection.stream.aclose()
        return response

    def _target(self, url: str) -> bytes:
        """The request target of ``url``, which must name this client's origin."""
        target = self._targets.get(url)
        if target is None:
            parts = urlsplit(url)
            if parts.scheme != "http" or parts.netloc != self._netloc:
                raise ValueError(f"this client speaks to http://{self._netloc} only, not {url!r}")
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            target = self._targets[url] = path.encode()
        return target

    async def _connect(self) -> _Connection:
        connection = _Connection(await trio.open_tcp_stream(self._host, self._port))
        self._open.add(connection)
        return connection

    async def _exchange(self, connection: _Connection, request: bytes) -> RawResponse:
        answer = connection.answer
        answer.reset()
        await connection.stream.send_all(request)
        while not answer.done:
            data = await connection.stream.receive_some(_READ)
            if not data:
                raise trio.BrokenResourceError("the server closed the connection mid-answer")
            answer.parser.feed_data(data)
        status = answer.parser.get_status_code()
        return RawResponse(status, answer.headers, b"".join(answer.body))

    async def aclose(self) -> None:
        # Bounded and shielded: every connection is closed even when the load is cancelled.
        with trio.move_on_after(_CLOSE_S, shield=True):
            for connection in list(self._open):
                await connection.stream.aclose()
        self._open.clear()
        self._idle.clear()

    async def __aenter__(self) -> RawClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
