"""The floor of ``scripts/bench gateway``: a lean reverse proxy for MCP on Hypercorn and h11.

What forwarding an MCP call costs on the stack agentws stands on, with
nothing of agentws in the way: a bare ASGI app on Hypercorn's trio worker
sends each request to the upstream over a small pool of keep-alive
HTTP/1.1 connections spoken with h11 (the parser Hypercorn itself uses),
and passes the answer back as it arrives. No MCP SDK, no auth, no JSON
parsing: the request's method, path, body and its ``Mcp-Session-Id``,
``Mcp-Protocol-Version``, ``Accept`` and ``Content-Type`` headers go up;
the upstream's status, the headers an MCP client reads (``Content-Type``,
``Content-Length``, ``Mcp-Session-Id``, ``Cache-Control``) and its body
come back. The upstream answers a POST with a short SSE stream: it is
relayed chunk by chunk to its end, and the connection goes back to the
pool. Whatever agentws spends per call above this is what its auth,
permissions, audit and MCP handling cost.

A GET stream would be relayed the same way but hold its connection while
open; the load client opens none, so nothing here is built for them.

Run: ``python lean_proxy.py --upstream http://127.0.0.1:PORT``. It binds
127.0.0.1 on a free port, prints one JSON line ``{"base_url": ...}`` on
stdout (:mod:`benchlib.hypercorn_loopback`) and serves until SIGTERM/SIGINT;
a request to ``<base_url><path>`` goes to ``<upstream><path>``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import h11
import trio

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.hypercorn_loopback import loopback_config, serve_on_loopback

__all__ = ["UpstreamError", "UpstreamPool", "make_app"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

# The request headers an MCP server reads (auth aside: the floor has none).
_REQUEST_HEADERS = frozenset(
    {b"mcp-session-id", b"mcp-protocol-version", b"accept", b"content-type"}
)
# The answer's headers an MCP client reads; hop-by-hop ones (Transfer-Encoding,
# Connection) are Hypercorn's to set for its own connection.
_RESPONSE_HEADERS = frozenset(
    {b"content-type", b"content-length", b"mcp-session-id", b"cache-control"}
)
# Idle connections kept between requests; one released beyond that is closed.
# The bench runs 16 client workers by default: one connection each, with room.
_MAX_IDLE = 32
# An idle connection older than this is closed, not reused: uvicorn (the
# upstream) closes its end after 5 s of quiet, and a request sent down a
# connection it is closing would be lost.
_MAX_IDLE_S = 4.0
_READ_BYTES = 65536

# What a connection that went stale while idle raises when used.
_STALE = (OSError, trio.BrokenResourceError, h11.ProtocolError)


class UpstreamError(Exception):
    """The upstream closed a connection mid-answer, or answered out of turn."""


@attrs.define(eq=False)
class _Link:
    """One connection to the upstream and the h11 state of its exchanges."""

    stream: trio.SocketStream
    http: h11.Connection
    reused: bool = False
    idle_since: float = 0.0


@attrs.define(eq=False)
class UpstreamPool:
    """Keep-alive HTTP/1.1 connections to one upstream, at most ``max_idle`` of them idle.

    A request takes an idle connection (or opens one) and owns it until its
    answer has been read to the end; then :meth:`give_back` keeps it for the
    next request, or closes it when the exchange did not end cleanly or the
    pool is full. Connections open at once are as many as requests in flight.
    """

    host: str
    port: int
    max_idle: int = _MAX_IDLE
    #: The Host header of every request: the upstream's host and port.
    authority: bytes = attrs.field(
        init=False, default=attrs.Factory(lambda p: f"{p.host}:{p.port}".encode(), takes_self=True)
    )
    _idle: list[_Link] = attrs.field(factory=list, init=False)

    async def take(self) -> _Link:
        """The most recently used idle connection young enough to trust, or a new one."""
        now = trio.current_time()
        while self._idle:
            link = self._idle.pop()
            if now - link.idle_since < _MAX_IDLE_S:
                link.reused = True
                return link
            await trio.aclose_forcefully(link.stream)
        return await self.connect()

    async def connect(self) -> _Link:
        stream = await trio.open_tcp_stream(self.host, self.port)
        return _Link(stream, h11.Connection(h11.CLIENT))

    async def give_back(self, link: _Link, clean: bool) -> None:
        """Keep ``link`` for the next request if its exchange ended ``clean``; else close it.

        *Resource handling*: closing is forceful (no graceful shutdown to
        wait for), so this is bounded even under cancellation.
        """
        http = link.http
        if (
            clean
            and len(self._idle) < self.max_idle
            and http.our_state is h11.DONE
            and http.their_state is h11.DONE
        ):
            http.start_next_cycle()
            link.idle_since = trio.current_time()
            self._idle.append(link)
            return
        await trio.aclose_forcefully(link.stream)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for link in idle:
            await trio.aclose_forcefully(link.stream)


async def _next_event(link: _Link) -> Any:
    """The next h11 event of the answer, reading from the socket as needed."""
    http = link.http
    while True:
        event = http.next_event()
        if event is not h11.NEED_DATA:
            return event
        http.receive_data(await link.stream.receive_some(_READ_BYTES))


async def _ask(link: _Link, request: h11.Request, body: bytes) -> h11.Response:
    """Send the request on ``link``; the answer's status line and headers.

    :raises UpstreamError: the upstream closed the connection before answering.
    """
    http = link.http
    data = http.send(request) or b""
    if body:
        data += http.send(h11.Data(data=body)) or b""
    data += http.send(h11.EndOfMessage()) or b""
    await link.stream.send_all(data)
    while True:
        event = await _next_event(link)
        if isinstance(event, h11.Response):
            return event
        if not isinstance(event, h11.InformationalResponse):
            raise UpstreamError(f"the upstream sent {event!r} instead of an answer")


async def _relay_body(link: _Link, send: Send) -> None:
    """Pass the answer's body on to the client as it arrives, to its end.

    Chunks already parsed go out together; nothing parsed is held while
    waiting on the socket, so an SSE event reaches the client when it arrives.
    """
    pending: list[bytes] = []
    http = link.http
    while True:
        event = http.next_event()
        if event is h11.NEED_DATA:
            if pending:
                await send(
                    {"type": "http.response.body", "body": b"".join(pending), "more_body": True}
                )
                pending.clear()
            http.receive_data(await link.stream.receive_some(_READ_BYTES))
        elif isinstance(event, h11.Data):
            pending.append(event.data)
        elif isinstance(event, h11.EndOfMessage):
            await send({"type": "http.response.body", "body": b"".join(pending)})
            return
        else:
            raise UpstreamError(f"the upstream sent {event!r} in the middle of an answer")


async def _read_body(receive: Receive) -> bytes | None:
    """The request's whole body, or None if the client left before sending it."""
    message = await receive()
    chunks: list[bytes] = []
    while True:
        if message["type"] == "http.disconnect":
            return None
        body: bytes = message.get("body", b"")
        if not message.get("more_body"):
            return body if not chunks else b"".join([*chunks, body])
        chunks.append(body)
        message = await receive()


async def forward(pool: UpstreamPool, scope: Scope, body: bytes, send: Send) -> None:
    """Send one request to the upstream and relay its answer to the client.

    A connection taken from the pool may have been closed by the upstream
    while idle: if it fails before any answer, the request is sent once more
    on a new connection (the upstream never read it).

    *Error handling*: a failure after the answer began (or on a new
    connection) propagates; Hypercorn ends the client's connection.
    """
    headers = [(b"host", pool.authority)]
    headers += [(name, value) for name, value in scope["headers"] if name in _REQUEST_HEADERS]
    if body or scope["method"] == "POST":
        headers.append((b"content-length", str(len(body)).encode()))
    target = scope.get("raw_path") or scope["path"].encode()
    if scope.get("query_string"):
        target += b"?" + scope["query_string"]
    request = h11.Request(method=scope["method"], target=target, headers=headers)
    link = await pool.take()
    clean = False
    try:
        try:
            response = await _ask(link, request, body)
        except (*_STALE, UpstreamError):
            if not link.reused:
                raise
            await trio.aclose_forcefully(link.stream)
            link = await pool.connect()
            response = await _ask(link, request, body)
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": [(n, v) for n, v in response.headers if n in _RESPONSE_HEADERS],
            }
        )
        await _relay_body(link, send)
        clean = True
    finally:
        await pool.give_back(link, clean)


async def _lifespan(pool: UpstreamPool, receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await pool.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return


def make_app(upstream: str) -> App:
    """An ASGI app forwarding every HTTP request to ``upstream`` (``http://HOST:PORT``)."""
    parts = urlsplit(upstream)
    if parts.scheme != "http" or not parts.hostname or not parts.port:
        raise ValueError(f"the upstream must be http://HOST:PORT, not {upstream!r}")
    pool = UpstreamPool(parts.hostname, parts.port)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(pool, receive, send)
            return
        if scope["type"] != "http":
            return
        body = await _read_body(receive)
        if body is not None:
            await forward(pool, scope, body, send)

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", required=True, help="the upstream's origin: http://HOST:PORT")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    app = make_app(args.upstream)
    trio.run(serve_on_loopback, app, loopback_config())


if __name__ == "__main__":
    main()
