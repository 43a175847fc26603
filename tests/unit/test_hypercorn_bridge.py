"""Hypercorn with agentws's connection handling (:mod:`agentws.bridges.hypercorn_bridge`), on
loopback.

Responses keep their bytes and order on a kept-alive connection, pipelined requests are
answered in order, a streamed response's head is sent before its body exists, an idle
connection is closed after the keep-alive timeout, a connection whose response asked
it to wait before closing does, when its client hangs up (for longer than the keep-alive
timeout too), a write whose task is cancelled writes nothing, and a response larger
than the socket takes at once arrives whole. What cannot be read is
answered (400, 431, 501) and its connection closed; ``Expect: 100-continue``, HTTP/1.0
and the switches to HTTP/2 (its preface, ``h2c``) work as on stock Hypercorn, and a
WebSocket upgrade is answered in HTTP/1.1 (agentws serves no WebSocket). The
replacements go in only on a tested Hypercorn release, and what they override is still
there.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import hypercorn.protocol
import hypercorn.trio.run
import pytest
import trio
import trio.testing
from hypercorn.config import Config
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.protocol.http_stream import HTTPStream
from hypercorn.trio import serve
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext

from agentws.bridges import hangups, hypercorn_bridge
from agentws.bridges.hypercorn_bridge import install

# Bounds a wait on a loaded machine; nothing here is timed.
_WAIT_S = 10.0
_KEEP_ALIVE_S = 0.2
# More than loopback's socket buffers take at once: most of it waits for the client.
_BIG = bytes(range(256)) * (64 * 1024)


class _App:
    def __init__(self) -> None:
        self.head_read = trio.Event()
        # /held: the connection's close is waiting; what lets it go on.
        self.close_waiting = trio.Event()
        self.close_released = trio.Event()

    async def _held_close(self) -> None:
        self.close_waiting.set()
        await self.close_released.wait()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].rsplit(".", 1)[1]
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        path = scope["path"]
        if path == "/stream":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            # The body exists only once the client has read the head.
            await self.head_read.wait()
            await send({"type": "http.response.body", "body": b"late", "more_body": False})
            return
        if path == "/held":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            hang_up = hangups.current(scope)
            assert hang_up is not None
            hang_up.hold_close(self._held_close)
            await send({"type": "http.response.body", "body": b"end", "more_body": False})
            return
        if path == "/cancelled":  # a write its task's cancellation stops: never written
            await send({"type": "http.response.start", "status": 200, "headers": []})
            with trio.CancelScope() as scope:
                scope.cancel()
                await send({"type": "http.response.body", "body": b"lost", "more_body": True})
            assert scope.cancelled_caught
            await send({"type": "http.response.body", "body": b"kept", "more_body": False})
            return
        if path == "/echo":
            body = b""
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            headers = [(b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        if path == "/big":
            headers = [(b"content-length", str(len(_BIG)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": _BIG})
            return
        if path == "/cut":  # a length given, and the response ends with no body
            headers = [(b"content-length", b"5")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            return
        if path == "/empty":
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = path.encode() * 3
        headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body[:2], "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": True})
        await send({"type": "http.response.body", "body": body[2:]})


@asynccontextmanager
async def _served(app: _App) -> AsyncIterator[int]:
    install()
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.keep_alive_timeout = _KEEP_ALIVE_S
    config.accesslog = None
    async with trio.open_nursery() as nursery:
        shutdown = trio.Event()
        binds = await nursery.start(
            lambda task_status: serve(
                app, config, shutdown_trigger=shutdown.wait, task_status=task_status
            )
        )
        port = int(binds[0].rsplit(":", 1)[1])
        try:
            yield port
        finally:
            shutdown.set()


async def _read_until(stream: trio.SocketStream, buffer: bytearray, end: bytes) -> bytes:
    with trio.fail_after(_WAIT_S):
        while end not in buffer:
            data = await stream.receive_some()
            assert data, f"closed before {end!r}; got {bytes(buffer)!r}"
            buffer += data
    index = buffer.index(end) + len(end)
    found = bytes(buffer[:index])
    del buffer[:index]
    return found


async def _get(port: int, path: str) -> tuple[trio.SocketStream, bytearray]:
    """A new connection that has sent ``GET path``; the buffer its answer is read into."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return stream, bytearray()


async def _response(stream: trio.SocketStream, buffer: bytearray, length: int) -> bytes:
    head = await _read_until(stream, buffer, b"\r\n\r\n")
    with trio.fail_after(_WAIT_S):
        while len(buffer) < length:
            buffer += await stream.receive_some()
    body = bytes(buffer[:length])
    del buffer[:length]
    return head + body


async def test_responses_on_a_kept_alive_connection_are_whole_and_in_order() -> None:
    async with _served(_App()) as port:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        buffer = bytearray()
        for path in ("/a", "/bc", "/empty", "/def", "/head"):
            method = "HEAD" if path == "/head" else "GET"
            await stream.send_all(f"{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            length = 0 if method == "HEAD" or path == "/empty" else len(path) * 3
            answer = await _response(stream, buffer, length)
            head, _, body = answer.partition(b"\r\n\r\n")
            # The headers Hypercorn adds to every answer (made once a second).
            lines = head.split(b"\r\n")
            assert b"server: hypercorn-h11" in lines
            assert any(line.startswith(b"date: ") for line in lines)
            if path == "/empty":
                assert head.startswith(b"HTTP/1.1 204 ")
            else:
                assert head.startswith(b"HTTP/1.1 200 ")
                assert f"content-length: {len(path) * 3}".encode() in head.lower()
                assert body == (b"" if method == "HEAD" else path.encode() * 3)
        assert buffer == b""
        await stream.aclose()


async def test_a_streamed_response_sends_its_head_before_its_body() -> None:
    app = _App()
    async with _served(app) as port:
        stream, buffer = await _get(port, "/stream")
        head = await _read_until(stream, buffer, b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ")
        app.head_read.set()
        await _read_until(stream, buffer, b"late")
        await stream.aclose()


async def test_an_idle_connection_is_closed_after_the_keep_alive_timeout() -> None:
    async with _served(_App()) as port:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        buffer = bytearray()
        for _ in range(3):
            await stream.send_all(b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
            await _response(stream, buffer, 3)
        with trio.fail_after(_WAIT_S):
            while await stream.receive_some():
                pass
        await stream.aclose()


async def test_a_connection_held_by_its_response_closes_once_let_go() -> None:
    app = _App()
    async with _served(app) as port:
        stream, buffer = await _get(port, "/held")
        await _read_until(stream, buffer, b"end\r\n0\r\n\r\n")
        await stream.send_eof()  # the client hangs up (its side)
        with trio.fail_after(_WAIT_S):
            await app.close_waiting.wait()
        # The connection has not closed its side: nothing (no end) to read.
        assert not stream.socket.is_readable()
        app.close_released.set()
        with trio.fail_after(_WAIT_S):
            assert await stream.receive_some() == b""
        await stream.aclose()


async def test_a_held_close_outlasts_the_keep_alive_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    app = _App()
    async with _served(app) as port:
        stream, buffer = await _get(port, "/held")
        await _read_until(stream, buffer, b"end\r\n0\r\n\r\n")
        await stream.send_eof()
        with trio.fail_after(_WAIT_S):
            await app.close_waiting.wait()
        # The idle connection's timer was armed as the response ended; the
        # hang-up disarmed it: nothing closes the connection but the hold.
        await trio.sleep(_KEEP_ALIVE_S * 10)
        assert not stream.socket.is_readable()
        app.close_released.set()
        with trio.fail_after(_WAIT_S):
            assert await stream.receive_some() == b""
        await stream.aclose()


async def test_a_write_its_task_cancelled_writes_nothing() -> None:
    async with _served(_App()) as port:
        stream, buffer = await _get(port, "/cancelled")
        answer = await _read_until(stream, buffer, b"0\r\n\r\n")
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ")
        assert body == b"4\r\nkept\r\n0\r\n\r\n"
        await stream.aclose()


async def _exchange(port: int, sent: bytes) -> bytes:
    """What the server wrote on a new connection given ``sent``, until it closed it."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(sent)
    buffer = bytearray()
    with trio.fail_after(_WAIT_S):
        while data := await stream.receive_some():
            buffer += data
    await stream.aclose()
    return bytes(buffer)


async def test_a_response_larger_than_the_socket_takes_at_once_arrives_whole() -> None:
    async with _served(_App()) as port:
        stream, buffer = await _get(port, "/big")
        head = await _read_until(stream, buffer, b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ")
        with trio.fail_after(_WAIT_S):
            while len(buffer) < len(_BIG):
                buffer += await stream.receive_some()
        assert bytes(buffer[: len(_BIG)]) == _BIG
        del buffer[: len(_BIG)]
        # The connection goes on: the write left nothing behind.
        await stream.send_all(b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = await _response(stream, buffer, len(b"/next" * 3))
        assert answer.endswith(b"\r\n\r\n/next/next/next")
        await stream.aclose()


async def test_pipelined_requests_are_answered_in_order() -> None:
    async with _served(_App()) as port:
        wire = await _exchange(
            port,
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nfirst"
            b"GET /ab HTTP/1.1\r\nHost: x\r\n\r\n"
            b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5\r\nthird\r\n0\r\n\r\n"
            b"GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        bodies = [part.split(b"\r\n\r\n", 1)[1] for part in wire.split(b"HTTP/1.1 200 ")[1:]]
        assert bodies == [b"first", b"/ab/ab/ab", b"third", b"/last/last/last"]
        assert wire.lower().count(b"connection: close") == 1


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET / HTTP/1.1\r\n\r\n", b"400"),  # no Host
        (b"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"v" * 20_000 + b"\r\n\r\n", b"431"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", b"501"),
        # The second request is refused once the first is answered.
        (b"GET /ab HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\n\r\n", b"400"),
    ],
)
async def test_what_cannot_be_read_is_answered_and_the_connection_closed(
    request_bytes: bytes, status: bytes
) -> None:
    async with _served(_App()) as port:
        wire = await _exchange(port, request_bytes)
        last = wire.rsplit(b"HTTP/1.1 ", 1)[1]
        assert last.startswith(status + b" "), wire[:200]
        assert b"connection: close\r\n" in last
        assert last.endswith(b"\r\n\r\n")
        if b"/ab" in request_bytes:
            assert b"/ab/ab/ab" in wire


async def test_a_response_ended_before_its_body_still_sends_its_head() -> None:
    async with _served(_App()) as port:
        wire = await _exchange(port, b"GET /cut HTTP/1.1\r\nHost: x\r\n\r\n")
        assert wire.startswith(b"HTTP/1.1 200 ")
        assert wire.endswith(b"\r\n\r\n")  # the head alone, then the connection closed
        assert b"content-length: 5\r\n" in wire


async def test_a_client_expecting_100_continue_is_told_to_go_on() -> None:
    async with _served(_App()) as port:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        buffer = bytearray()
        await stream.send_all(
            b"POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"
        )
        informational = await _read_until(stream, buffer, b"\r\n\r\n")
        assert informational.startswith(b"HTTP/1.1 100 ")
        await stream.send_all(b"body")
        answer = await _response(stream, buffer, 4)
        assert answer.startswith(b"HTTP/1.1 200 ")
        assert answer.endswith(b"\r\n\r\nbody")
        await stream.aclose()


async def test_an_http10_client_is_answered_then_let_go() -> None:
    async with _served(_App()) as port:
        wire = await _exchange(port, b"GET /stream10 HTTP/1.0\r\n\r\n")
        head, _, body = wire.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ")
        assert b"connection: close" in head.lower()
        assert body == b"/stream10" * 3


async def test_a_websocket_upgrade_is_answered_as_http11_then_closed() -> None:
    async with _served(_App()) as port:
        wire = await _exchange(
            port,
            b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            b"\x81\x80frame",
        )
        head, _, body = wire.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ")
        assert b"connection: close" in head.lower()
        assert body == b"/ws/ws/ws"


async def test_http2_is_still_spoken_on_its_preface_and_on_h2c() -> None:
    async with _served(_App()) as port:
        for opening in (
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
            b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n",
        ):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            buffer = bytearray()
            # The preface arrives in two writes: the switch waits for all of it.
            await stream.send_all(opening[:5])
            await trio.testing.wait_all_tasks_blocked()
            await stream.send_all(opening[5:])
            if opening.startswith(b"GET"):
                switching = await _read_until(stream, buffer, b"\r\n\r\n")
                assert switching.startswith(b"HTTP/1.1 101 ")
            with trio.fail_after(_WAIT_S):
                while len(buffer) < 9:
                    buffer += await stream.receive_some()
            assert buffer[3] == 0x4  # an HTTP/2 SETTINGS frame
            await stream.aclose()


def test_the_installed_hypercorn_is_a_tested_release() -> None:
    version = hypercorn_bridge.installed_version()
    assert version in hypercorn_bridge.TESTED_VERSIONS, (
        f"Hypercorn {version} is installed but agentws.bridges.hypercorn_bridge was tested with "
        f"{sorted(hypercorn_bridge.TESTED_VERSIONS)}: follow the upgrade checklist in "
        "docs/architecture.md"
    )


@pytest.mark.parametrize(
    ("owner", "name"),
    [
        (TCPServer, "_read_data"),
        (TCPServer, "_initiate_server_close"),
        (TCPServer, "_idle_timeout"),
        (TCPServer, "protocol_send"),
        (H11Protocol, "stream_send"),
        (H11Protocol, "handle"),
        (H11Protocol, "_close_stream"),
        (HTTPStream, "handle"),
    ],
)
def test_what_the_replacements_override_or_call_is_still_there(owner: type, name: str) -> None:
    assert callable(getattr(owner, name, None)), (
        f"Hypercorn {hypercorn_bridge.installed_version()} has no {owner.__name__}.{name}, "
        "which agentws.bridges.hypercorn_bridge overrides or calls"
    )


def test_the_protocol_has_every_attribute_hypercorn_gives_its_own_but_h11s() -> None:
    config = Config()
    context = WorkerContext(None)

    async def send(event: Any) -> None:
        pass

    args = (None, config, context, None, None, False, None, None, send)
    stock = set(vars(H11Protocol(*args)))  # type: ignore[arg-type]
    ours = set(vars(hypercorn_bridge.HttpToolsProtocol(*args)))
    assert stock - ours == {"connection"}


def test_the_worker_takes_its_classes_where_the_bridge_puts_them() -> None:
    assert hasattr(hypercorn.trio.run, "TCPServer")
    assert hasattr(hypercorn.protocol, "H11Protocol")


def test_an_untested_release_keeps_stock_hypercorn_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(hypercorn.trio.run, "TCPServer", TCPServer)
    monkeypatch.setattr(hypercorn.protocol, "H11Protocol", H11Protocol)
    with caplog.at_level(logging.WARNING, logger="agentws.server"):
        assert hypercorn_bridge.install(version="0.99.0") is False
    assert hypercorn.trio.run.TCPServer is TCPServer
    assert hypercorn.protocol.H11Protocol is H11Protocol
    assert "Hypercorn 0.99.0 is not a release agentws was tested with" in caplog.text
    assert "stock Hypercorn serves" in caplog.text


def test_a_tested_release_installs_both_replacements(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hypercorn.trio.run, "TCPServer", TCPServer)
    monkeypatch.setattr(hypercorn.protocol, "H11Protocol", H11Protocol)
    assert hypercorn_bridge.install() is True
    assert hypercorn.trio.run.TCPServer is hypercorn_bridge.BridgedTCPServer
    assert hypercorn.protocol.H11Protocol is hypercorn_bridge.HttpToolsProtocol
