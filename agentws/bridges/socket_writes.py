"""A write to a connection's socket that the kernel takes at once, without a turn of trio's loop.

``trio.SocketStream.send_all`` gives the scheduler a turn after every write,
even one the kernel took whole: a pass through trio's run queue for each.
When ten thousand MCP streams end at once (a token revoked), each end is a
write, and those passes are a fifth of the loop's time until the last end
(``scripts/bench sessions``, py-spy). :func:`write_now` writes what the
kernel takes with one ``os.write`` on the socket's descriptor (trio's public
``fileno()``); what it leaves is the caller's to send with ``send_all``.

Only a plain socket is written this way: a TLS stream has records to
frame, and gets 0 (nothing written).
"""

from __future__ import annotations

import os

import trio

__all__ = ["write_now"]


def write_now(stream: trio.abc.Stream, data: bytes) -> int:
    """Write what the kernel takes of ``data`` now; how many bytes that was.

    Returns:
        The bytes written: 0 when the socket's buffer is full, or when
        ``stream`` is not a plain socket (nothing was written).

    Error handling:
        ``trio.ClosedResourceError`` when the stream was closed here,
        ``trio.BrokenResourceError`` when the peer is gone (as ``send_all``).
    """
    if type(stream) is not trio.SocketStream or not data:
        return 0
    fd = stream.socket.fileno()
    if fd < 0:
        raise trio.ClosedResourceError("the connection's socket is closed")
    try:
        return os.write(fd, data)
    except BlockingIOError:
        return 0
    except OSError as exc:  # EPIPE, ECONNRESET: Python ignores SIGPIPE
        raise trio.BrokenResourceError(f"the peer is gone: {exc}") from exc
