"""A connection's next input read once it has come, without trying the socket first.

``trio.SocketStream.receive_some`` tries the socket first and waits for it
only when nothing is there. On a kept-alive connection whose client sends
its next request after reading the last answer, that first try fails every
time: a ``recv`` returning ``EAGAIN``, around which the interpreter lock is
let go and taken back, waking a thread waiting for it (a store reader) that
then finds it taken again. :func:`receive_when_ready` waits for the socket
to be readable first (trio's public ``wait_readable``) and then reads what
is there with one ``os.read`` on its descriptor (trio's public
``fileno()``): one system call less per request, and 5-9% more calls/s of
``search_context`` through ``scripts/bench mcp`` (A/B, docs/benchmarks.md).

The server's connections read this way after their first read (the first
read of a new connection, whose request has usually arrived with it, tries
the socket at once as trio does), and the links' connection pool reads its
answers this way. Only a plain socket is read so: a TLS stream may hold
decrypted input that its socket does not show, and is read with
``receive_some``.
"""

from __future__ import annotations

import os

import trio

__all__ = ["receive_when_ready"]


async def receive_when_ready(stream: trio.abc.ReceiveStream, max_bytes: int) -> bytes | bytearray:
    """The next bytes of ``stream``, at most ``max_bytes``, once there are some.

    Returns:
        What came (``b""`` when the peer ended its side), as ``receive_some``.

    Error handling:
        ``trio.ClosedResourceError`` when the stream was closed here,
        ``trio.BrokenResourceError`` when the peer is gone (as ``receive_some``).
    """
    if type(stream) is not trio.SocketStream:
        return await stream.receive_some(max_bytes)
    socket = stream.socket
    if socket.fileno() < 0:
        raise trio.ClosedResourceError("the connection's socket is closed")
    await trio.lowlevel.wait_readable(socket)
    fd = socket.fileno()
    if fd < 0:  # closed by another task as the wait ended
        raise trio.ClosedResourceError("the connection's socket is closed")
    try:
        return os.read(fd, max_bytes)
    except BlockingIOError:  # readable, then taken: rare; wait as trio does
        return await stream.receive_some(max_bytes)
    except OSError as exc:  # ECONNRESET and the like
        raise trio.BrokenResourceError(f"the peer is gone: {exc}") from exc
