"""A client that sends its request body slowly, on a raw socket, as no client library does.

:func:`trickle` sends a request head at once and then its body a few bytes
at a time, while reading whatever the server answers, until the server
closes the connection or the test's bound passes. Tests of the body read
timeout (``AGENTWS_BODY_READ_TIMEOUT_S``) use it to hold connections open
the way a slow-body attack does.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import trio

from tests.fuzz.fuzz_support import RawReply, RawResponse, read_until_closed

__all__ = ["Trickled", "assert_timed_out", "request_head", "trickle"]


@attrs.frozen
class Trickled:
    """What became of one trickled request."""

    reply: RawReply
    #: Body bytes sent before the server answered and closed (or the bound passed).
    sent: int
    #: Seconds from the first body byte to the connection's end (or the bound).
    elapsed_s: float


def request_head(path: str, base_url: str, headers: dict[str, str], *, length: int | None) -> bytes:
    """An HTTP/1.1 POST head: with ``Content-Length: length``, or chunked when it is None."""
    host = base_url.removeprefix("http://")
    fields = {"Host": host, **headers}
    if length is None:
        fields["Transfer-Encoding"] = "chunked"
    else:
        fields["Content-Length"] = str(length)
    lines = [f"POST {path} HTTP/1.1", *(f"{name}: {value}" for name, value in fields.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def trickle(
    base_url: str,
    head: bytes,
    body: bytes,
    *,
    piece: int = 1,
    every_s: float,
    bound_s: float,
    chunked: bool = False,
) -> Trickled:
    """Send ``head``, then ``body`` ``piece`` bytes every ``every_s``, reading all the while.

    Stops when the server closes the connection, or after ``bound_s``
    (then ``reply.closed`` is False). ``chunked`` frames each piece as a chunk.
    """
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    received = bytearray()
    closed = False
    sent = 0
    started = trio.current_time()
    async with stream:
        await stream.send_all(head)
        started = trio.current_time()

        async def send_body() -> None:
            nonlocal sent
            for at in range(0, len(body), piece):
                part = body[at : at + piece]
                data = b"%x\r\n%s\r\n" % (len(part), part) if chunked else part
                try:
                    await stream.send_all(data)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return
                sent += len(part)
                await trio.sleep(every_s)
            if chunked:
                try:
                    await stream.send_all(b"0\r\n\r\n")
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return

        with trio.move_on_after(bound_s):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(send_body)
                closed = await read_until_closed(stream, received)
                nursery.cancel_scope.cancel()
    elapsed = trio.current_time() - started
    return Trickled(RawReply(bytes(received), closed=closed), sent, elapsed)


def assert_timed_out(trickled: Trickled, *, body_length: int) -> dict[str, Any]:
    """One 408 ``body_read_timeout`` JSON refusal, the connection closed, the body unsent."""
    reply = trickled.reply
    assert reply.closed, f"the server kept the connection open: {reply}"
    assert trickled.sent < body_length, f"the whole body went through: {reply}"
    (response,) = reply.final
    assert response.status == 408, reply
    assert response.headers.get("connection") == "close", reply
    assert isinstance(response, RawResponse)
    assert response.headers["content-type"] == "application/json", reply
    answer = json.loads(response.body)
    assert set(answer) == {"error"}, answer
    assert set(answer["error"]) == {"code", "message"}, answer
    assert answer["error"]["code"] == "body_read_timeout", answer
    assert answer["error"]["message"].strip(), answer
    return dict(answer)
