"""A lean HTTP/1.1 transport for connector links: trio sockets, connections kept alive.

Every call relayed to a remote MCP server is an HTTP exchange on the
link's transport, and the proxy's CPU per call is measured against the
remote's own (``scripts/bench gateway``). httpx2's default transport
(httpcore2) spent about a quarter of the proxied path's time there: its
pool bookkeeping, its per-request layers and its byte streams. This
transport does what a link needs and no more:

- HTTP/1.1 only (as httpx2's default transport), on ``trio`` sockets,
  each request written and its answer parsed by
  :mod:`agentws.connectors.http11_wire` (answers by ``httptools``, at a
  tenth of what ``h11`` spent on them); TLS with the process's one client
  context (:func:`~agentws.connectors.url_guard.shared_ssl_context`) and
  the SNI name the URL guard asks for (``sni_hostname``);
- a pool of idle connections per origin, each reused while the server
  keeps it open and for at most ``keepalive_s``; a connection the server
  closed while idle is noticed before it is reused, never after a request
  was written to it;
- at most ``max_connections`` exchanges at once (further ones wait, for
  the request's ``pool`` timeout at most);
- httpx2's timeouts (``connect``, ``read``, ``write``, ``pool``, from the
  request's ``timeout`` extension) and its exceptions, so every caller
  above (the URL guard, the answer bounds, the ``mcp`` SDK's client)
  sees the transport it expects.

A request is never sent twice: a failure is the caller's to judge. An
answer closed before its end has arrived closes its connection.

It sits under :class:`~agentws.connectors.url_guard.GuardedTransport`,
which has checked and pinned the address before a request gets here.
"""

from __future__ import annotations

import math
import ssl
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import trio

from agentws.bridges.socket_reads import receive_when_ready
from agentws.bridges.socket_writes import write_now
from agentws.connectors.http11_wire import Answer, request_head

__all__ = ["Http11Pool"]

#: Idle connections kept per origin, and for how long (httpcore2's default).
_IDLE_PER_ORIGIN = 32
_KEEPALIVE_S = 5.0
_READ_CHUNK = 65536
# Request bytes gathered before they are written.
_WRITE_AT = 65536
# Bound on closing a connection's TLS session politely.
_CLOSE_S = 1.0

#: ``(scheme, host, port, sni)``: connections to one origin are interchangeable.
_Origin = tuple[str, str, int, str | None]


_TIMEOUT_KINDS = ("connect", "read", "write", "pool")


def _timeouts(request: httpx2.Request) -> dict[str, float]:
    given = request.extensions.get("timeout", {})
    return {k: math.inf if given.get(k) is None else float(given[k]) for k in _TIMEOUT_KINDS}


class _Connection:
    """One HTTP/1.1 connection: its stream and its reading side."""

    __slots__ = ("answer", "idle_since", "origin", "stream")

    def __init__(self, origin: _Origin, stream: trio.abc.Stream) -> None:
        self.origin = origin
        self.stream = stream
        self.answer = Answer()
        self.idle_since = 0.0

    def _socket(self) -> Any:
        """The TCP socket under the stream (under TLS, if any); None if there is none."""
        stream: Any = self.stream
        if isinstance(stream, trio.SSLStream):
            stream = stream.transport_stream
        return getattr(stream, "socket", None)

    def closed_by_peer(self) -> bool:
        """Whether the idle connection has anything to read: the server's close (or junk)."""
        socket = self._socket()
        return socket is None or bool(socket.is_readable())

    def drop(self) -> None:
        """Close an idle connection no longer wanted, without waiting on its peer."""
        self.answer.close()
        socket = self._socket()
        if socket is not None:
            socket.close()

    async def send(self, data: bytes, timeout_s: float) -> None:
        if not data:
            return
        # What the kernel takes at once (a request, as a rule) is written
        # without the turn of the loop and the timeout's scope send_all
        # would cost each call; the rest goes through send_all.
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            sent = write_now(self.stream, data)
            if sent == len(data):
                return
            with trio.move_on_after(timeout_s) as waited:
                await self.stream.send_all(memoryview(data)[sent:])
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise httpx2.WriteError(str(exc) or type(exc).__name__) from exc
        if waited.cancelled_caught:
            raise httpx2.WriteTimeout("the remote took no more of the request in time")

    async def receive(self, timeout_s: float) -> None:
        """Wait for the server's next bytes (or its close), and parse them."""
        if timeout_s == math.inf:
            # Bounded by the call's own deadline (a relayed call's read):
            # a scope of its own would only cost every call.
            data = await self._receive()
        else:
            with trio.move_on_after(timeout_s) as waited:
                data = await self._receive()
            if waited.cancelled_caught:
                raise httpx2.ReadTimeout("the remote sent nothing in time")
        if data:
            self.answer.feed(data if isinstance(data, bytes) else bytes(data))
        else:
            self.answer.server_closed()

    async def _receive(self) -> bytes | bytearray:
        try:
            # The answer comes after the request: wait for it, not try first.
            return await receive_when_ready(self.stream, _READ_CHUNK)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise httpx2.ReadError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        self.answer.close()
        with trio.move_on_after(_CLOSE_S) as scope:
            scope.shield = True
            await trio.aclose_forcefully(self.stream)


class _Body(httpx2.AsyncByteStream):
    """An answer's body, read from its connection; closing it frees the connection."""

    def __init__(self, pool: Http11Pool, connection: _Connection, read_s: float) -> None:
        self._pool = pool
        self._connection: _Connection | None = connection
        self._read_s = read_s

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        if connection is None:
            raise httpx2.StreamClosed()
        answer = connection.answer
        while True:
            piece = answer.take_body()
            if piece:
                yield piece
            elif answer.ended:
                return
            else:
                await connection.receive(self._read_s)

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await self._pool.done_with(connection)


class Http11Pool(httpx2.AsyncBaseTransport):
    """HTTP/1.1 with keep-alive connections; see the module docstring.

    Args:
        max_connections: exchanges at once, at most (connections open for them).
        ssl_context: the TLS client context of ``https`` origins.
        keepalive_s: how long an idle connection is kept for reuse.

    Resource handling:
        Each answer holds its connection until it is closed (read to its
        end or not); :meth:`aclose` closes the idle ones. Owned by the
        guard of a link's attempt, which closes it with its client.
    """

    def __init__(
        self,
        *,
        max_connections: int,
        ssl_context: ssl.SSLContext,
        keepalive_s: float = _KEEPALIVE_S,
    ) -> None:
        self._slots = trio.Semaphore(max_connections)
        self._ssl = ssl_context
        self._keepalive_s = keepalive_s
        self._idle: defaultdict[_Origin, list[_Connection]] = defaultdict(list)
        self._closed = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        timeouts = _timeouts(request)
        url = request.url
        sni = request.extensions.get("sni_hostname")
        origin: _Origin = (
            url.scheme,
            url.host,
            url.port or (443 if url.scheme == "https" else 80),
            sni if isinstance(sni, str) else None,
        )
        try:
            self._slots.acquire_nowait()  # the usual case: no wait, so no scope to bound it
        except trio.WouldBlock:
            with trio.move_on_after(timeouts["pool"]) as waited:
                await self._slots.acquire()
            if waited.cancelled_caught:
                raise httpx2.PoolTimeout("no connection of the pool came free in time") from None
        connection: _Connection | None = None
        try:
            connection = self._take_idle(origin) or await self._connect(origin, timeouts)
            answer = await self._exchange(connection, request, timeouts)
        except BaseException:
            if connection is not None:
                await connection.aclose()
            self._slots.release()
            raise
        return httpx2.Response(
            answer.status,
            headers=answer.headers,
            stream=_Body(self, connection, timeouts["read"]),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": answer.reason},
        )

    def _take_idle(self, origin: _Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = trio.current_time()
        while idle:
            connection = idle.pop()
            if now - connection.idle_since < self._keepalive_s and not connection.closed_by_peer():
                return connection
            connection.drop()
        return None

    async def _connect(self, origin: _Origin, timeouts: dict[str, float]) -> _Connection:
        scheme, host, port, sni = origin
        with trio.move_on_after(timeouts["connect"]) as waited:
            try:
                stream: trio.abc.Stream = await trio.open_tcp_stream(host, port)
            except OSError as exc:
                raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
            if scheme == "https":
                tls = trio.SSLStream(
                    stream, self._ssl, server_hostname=sni or host, https_compatible=True
                )
                try:
                    await tls.do_handshake()
                except (OSError, trio.BrokenResourceError) as exc:
                    await trio.aclose_forcefully(stream)
                    raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
                stream = tls
        if waited.cancelled_caught:
            raise httpx2.ConnectTimeout(f"no connection to {host}:{port} in time")
        return _Connection(origin, stream)

    async def _exchange(
        self, connection: _Connection, request: httpx2.Request, timeouts: dict[str, float]
    ) -> Answer:
        """Send ``request`` on ``connection`` and read its answer's head."""
        method = request.method.encode("ascii")
        head, framing = request_head(method, request.url.raw_path, request.headers.raw)
        answer = connection.answer
        answer.next_exchange(head_only=method == b"HEAD")
        # The head, the body and its end in one write when the body is small
        # (a JSON-RPC message): one system call, not three.
        write_s = timeouts["write"]
        pending = bytearray(head)
        stream = request.stream
        if not isinstance(stream, httpx2.AsyncByteStream):
            raise httpx2.LocalProtocolError("a link's request body must be an async stream")
        async for chunk in stream:
            pending += framing.piece(chunk)
            if len(pending) >= _WRITE_AT:
                await connection.send(bytes(pending), write_s)
                pending.clear()
        pending += framing.end()
        await connection.send(bytes(pending), write_s)
        read_s = timeouts["read"]
        while not answer.head_done:
            await connection.receive(read_s)
        return answer

    async def done_with(self, connection: _Connection) -> None:
        """An answer was closed: its connection goes back to the pool, or is closed."""
        try:
            if not self._closed and connection.answer.reusable:
                idle = self._idle[connection.origin]
                if len(idle) < _IDLE_PER_ORIGIN:
                    connection.idle_since = trio.current_time()
                    idle.append(connection)
                    return
            await connection.aclose()
        finally:
            self._slots.release()

    async def aclose(self) -> None:
        self._closed = True
        idle = [c for connections in self._idle.values() for c in connections]
        self._idle.clear()
        for connection in idle:
            await connection.aclose()
