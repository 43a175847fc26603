"""A write to a connection's socket that the kernel takes at once, without a turn of trio's loop.

``trio.SocketStream.send_all`` gives the scheduler a turn after every write,
even one the kernel took whole: a pass through trio's run queue for each.
When ten thousand MCP streams end at once (a token revoked), each end is a
write; trio's scheduler was a fifth of the loop's time until the last end,
and writing without that pass took 7-8% off it (``scripts/bench sessions``,
A/B). :func:`write_now` writes what the kernel takes with one ``os.write``
on the socket's descriptor (trio's public ``fileno()``); what it leaves is
the caller's to send with ``send_all``. The server's connections write
their answers this way, and the links' connection pool its requests (a
turn and a timeout scope less on every proxied call).

A writer still gives the loop its turns at its other checkpoints (waiting
for its next event, reading the next page of an export), and once the
kernel's buffer is full at ``send_all``'s: what it writes between two of
those, at most a replay's ``AGENTWS_MCP_REPLAY_EVENTS`` events or a page
of rows, is all it writes without a turn.

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
