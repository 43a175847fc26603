"""An answer given before the body was read (:meth:`agentws.http.asgi.BodyReader.answering`).

The server here is a memory channel, as Hypercorn's trio worker hands the
body over: its ``receive`` is the channel's, and ending the request puts
``http.disconnect`` into it, which waits while the channel is full.
"""

from __future__ import annotations

from typing import Any

import trio

from agentws.http.asgi import BodyReader

# Bounds a wait on a loaded machine; nothing here is timed.
_WAIT_S = 10.0
_PIECE = {"type": "http.request", "body": b"x" * 1024, "more_body": True}
_LAST = {"type": "http.request", "body": b"", "more_body": False}


class _Server:
    """A request's body queue, as full as its pieces make it, and what the app sent."""

    def __init__(self, *pieces: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
        self.body_in, self.body_out = trio.open_memory_channel[dict[str, Any]](max(1, len(pieces)))
        for piece in pieces:
            self.body_in.send_nowait(piece)
        self.scope = {"type": "http", "method": "POST", "headers": headers}
        self.sent: list[dict[str, Any]] = []

    def reader(self) -> BodyReader:
        return BodyReader(self.body_out.receive, _WAIT_S)

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            await self.body_in.send({"type": "http.disconnect"})  # as Hypercorn ends a request


async def _answer(send: Any, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": b"{}", "more_body": False})


async def test_an_answer_while_the_body_is_coming_drops_it_and_closes() -> None:
    server = _Server(_PIECE, _PIECE, headers=[(b"content-length", b"999999")])
    with trio.fail_after(_WAIT_S):
        await _answer(server.reader().answering(server.scope, server.send), [(b"a", b"b")])
    start, end = server.sent
    assert start["headers"] == [(b"a", b"b"), (b"connection", b"close")]
    assert end["body"] == b"{}"


async def test_without_it_the_same_answer_never_ends() -> None:
    server = _Server(_PIECE, _PIECE, headers=[(b"content-length", b"999999")])
    with trio.move_on_after(0.5) as waited:
        await _answer(server.send, [])
    assert waited.cancelled_caught


async def test_a_connection_header_becomes_close() -> None:
    server = _Server(_PIECE, headers=[(b"transfer-encoding", b"chunked")])
    send = server.reader().answering(server.scope, server.send)
    with trio.fail_after(_WAIT_S):
        await _answer(send, [(b"connection", b"keep-alive"), (b"connection", b"close")])
    assert server.sent[0]["headers"] == [(b"connection", b"close")]


async def test_a_body_all_there_is_dropped_and_the_connection_kept() -> None:
    server = _Server(_PIECE, _LAST, headers=[(b"content-length", b"1024")])
    reader = server.reader()
    with trio.fail_after(_WAIT_S):
        await _answer(reader.answering(server.scope, server.send), [])
    assert server.sent[0]["headers"] == []
    assert reader.complete


async def test_a_body_read_or_none_changes_nothing() -> None:
    for headers in ([], [(b"content-length", b"0")]):
        server = _Server(headers=headers)
        await _answer(server.reader().answering(server.scope, server.send), [])
        assert server.sent[0]["headers"] == []
    server = _Server(_LAST, headers=[(b"content-length", b"0")])
    reader = server.reader()
    refusals: Any = None  # a body within the limit is never refused
    assert await reader.read("0", 10, refusals) == b""
    with trio.fail_after(_WAIT_S):
        await _answer(reader.answering(server.scope, server.send), [])
    assert server.sent[0]["headers"] == []
