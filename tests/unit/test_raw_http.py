"""The load client's raw HTTP/1.1 (scripts/benchlib/raw_http.py), against a loopback server."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from benchlib.raw_http import TRANSPORT_ERRORS, RawClient


async def _read_request(stream: trio.SocketStream, buffer: bytearray) -> bytes | None:
    """One request's head and body (by its content-length) off ``buffer`` and the stream."""
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some(65536)
        if not data:
            return None
        buffer += data
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(rest) < length:
        rest += await stream.receive_some(65536)
    buffer[:] = rest[length:]
    return head + b"\r\n\r\n" + rest[:length]


def _answer(request: bytes) -> bytes:
    """Each path answers one way: with a length, chunked, closing, or cut short."""
    body = request.partition(b"\r\n\r\n")[2]
    if request.startswith(b"POST /chunked "):
        return (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
            b"5\r\ndata:\r\n" + f"{len(body):x}".encode() + b"\r\n" + body + b"\r\n0\r\n\r\n"
        )
    if request.startswith(b"POST /close "):
        return b"HTTP/1.1 202 Accepted\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
    if request.startswith(b"POST /cut "):
        return b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nnot all of it"
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


async def test_answers_come_whole_over_kept_connections_and_failures_raise() -> None:
    connections = 0

    async def serve(stream: trio.SocketStream) -> None:
        nonlocal connections
        connections += 1
        buffer = bytearray()
        async with stream:
            while (request := await _read_request(stream, buffer)) is not None:
                await stream.send_all(_answer(request))
                if request.startswith((b"POST /close ", b"POST /cut ")):
                    return

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, serve, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        async with RawClient(base) as client:
            for n in range(3):
                body = b'{"n": %d}' % n
                answer = await client.post(
                    f"{base}/mcp", content=body, headers={"content-type": "application/json"}
                )
                assert (answer.status_code, answer.content) == (200, body)
                assert answer.headers["mcp-session-id"] == "s-1"
            assert connections == 1  # one connection, kept alive

            streamed = await client.post(f"{base}/chunked", content=b"event", headers={})
            assert streamed.content == b"data:event"
            assert streamed.headers["content-type"] == "text/event-stream"

            closed = await client.post(f"{base}/close", content=b"", headers={})
            assert closed.status_code == 202
            after = await client.post(f"{base}/mcp", content=b"again", headers={})
            assert after.content == b"again"
            assert connections == 2  # the closed one was not reused

            with pytest.raises(TRANSPORT_ERRORS):
                await client.post(f"{base}/cut", content=b"", headers={})
        nursery.cancel_scope.cancel()


async def test_only_plain_http_urls_of_its_origin_are_taken() -> None:
    with pytest.raises(ValueError, match="plain http"):
        RawClient("https://127.0.0.1:8443/mcp")
    client = RawClient("http://127.0.0.1:8080/mcp")
    with pytest.raises(ValueError, match=r"127\.0\.0\.1:8080 only"):
        await client.post("http://127.0.0.1:9090/mcp", content=b"", headers={})
