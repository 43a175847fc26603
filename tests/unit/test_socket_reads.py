"""Input read once it has come (:mod:`agentws.bridges.socket_reads`), on a socket pair.

What comes later is read once it comes and what is there already at once;
the peer's end reads as ``b""``; a socket reset by its peer, or closed here
while waited on, fails as ``receive_some`` does; a stream that is not a
plain socket is left to ``receive_some``.
"""

from __future__ import annotations

import socket
import struct

import pytest
import trio
import trio.testing

from agentws.bridges.socket_reads import receive_when_ready

# Bounds a wait on a loaded machine; nothing here is timed.
_WAIT_S = 10.0


def _pair() -> tuple[trio.SocketStream, trio.socket.SocketType]:
    ours, peer = trio.socket.socketpair()
    return trio.SocketStream(ours), peer


async def test_what_comes_later_is_read_once_it_comes() -> None:
    stream, peer = _pair()
    got: list[bytes | bytearray] = []

    async def reader() -> None:
        got.append(await receive_when_ready(stream, 1024))

    with trio.fail_after(_WAIT_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            await trio.testing.wait_all_tasks_blocked()
            assert not got  # nothing has come: it waits
            await peer.send(b"GET / HTTP/1.1\r\n\r\n")
    assert got == [b"GET / HTTP/1.1\r\n\r\n"]
    await stream.aclose()
    peer.close()


async def test_what_is_there_already_is_read_at_most_max_bytes_at_a_time() -> None:
    stream, peer = _pair()
    await peer.send(b"0123456789")
    with trio.fail_after(_WAIT_S):
        assert await receive_when_ready(stream, 4) == b"0123"
        assert await receive_when_ready(stream, 1024) == b"456789"
    await stream.aclose()
    peer.close()


async def test_the_peers_end_reads_as_empty() -> None:
    stream, peer = _pair()
    peer.close()
    with trio.fail_after(_WAIT_S):
        assert await receive_when_ready(stream, 1024) == b""
    await stream.aclose()


async def test_a_peer_that_reset_the_connection_is_gone() -> None:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = trio.socket.socket()
    await client.connect(listener.getsockname())
    server, _ = await listener.accept()
    # Closing with a zero linger sends a reset, not an end.
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()
    stream = trio.SocketStream(server)
    with trio.fail_after(_WAIT_S), pytest.raises(trio.BrokenResourceError):
        await receive_when_ready(stream, 1024)
    await stream.aclose()
    listener.close()


async def test_a_socket_closed_here_while_waited_on_ends_the_wait() -> None:
    stream, peer = _pair()
    with trio.fail_after(_WAIT_S):
        async with trio.open_nursery() as nursery:

            async def close_once_waiting() -> None:
                await trio.testing.wait_all_tasks_blocked()
                await stream.aclose()

            nursery.start_soon(close_once_waiting)
            with pytest.raises(trio.ClosedResourceError):
                await receive_when_ready(stream, 1024)
    with pytest.raises(trio.ClosedResourceError):
        await receive_when_ready(stream, 1024)
    peer.close()


async def test_a_stream_that_is_not_a_plain_socket_is_left_to_receive_some() -> None:
    ours, theirs = trio.testing.memory_stream_pair()
    await theirs.send_all(b"through receive_some")
    with trio.fail_after(_WAIT_S):
        assert await receive_when_ready(ours, 1024) == b"through receive_some"
