"""A write the kernel takes at once (:mod:`agentws.bridges.socket_writes`), on a socket pair.

What the kernel takes is written and counted, a full buffer takes nothing (the
rest is ``send_all``'s), a socket closed here or whose peer is gone fails as
``send_all`` does, and a stream that is not a plain socket is left to ``send_all``.
"""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from agentws.bridges.socket_writes import write_now

# Bounds a wait on a loaded machine; nothing here is timed.
_WAIT_S = 10.0


def _pair() -> tuple[trio.SocketStream, trio.socket.SocketType]:
    ours, peer = trio.socket.socketpair()
    # A small buffer, so that a megabyte is more than the kernel takes at once.
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    return trio.SocketStream(ours), peer


async def _read(peer: trio.socket.SocketType, length: int) -> bytes:
    received = bytearray()
    with trio.fail_after(_WAIT_S):
        while len(received) < length:
            data = await peer.recv(2**16)
            assert data, "the writer closed early"
            received += data
    return bytes(received)


async def test_what_the_kernel_takes_is_written_and_the_rest_left_to_send_all() -> None:
    stream, peer = _pair()
    data = bytes(range(256)) * 4096  # 1 MB
    sent = write_now(stream, data)
    assert 0 < sent < len(data)
    assert write_now(stream, data[sent:]) == 0  # the buffer is full: nothing taken
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream.send_all, memoryview(data)[sent:])
        assert await _read(peer, len(data)) == data
    await stream.aclose()
    peer.close()


async def test_a_small_write_is_taken_whole() -> None:
    stream, peer = _pair()
    assert write_now(stream, b"0\r\n\r\n") == 5
    assert write_now(stream, b"") == 0
    assert await _read(peer, 5) == b"0\r\n\r\n"
    await stream.aclose()
    peer.close()


async def test_a_gone_peer_breaks_the_write_and_a_closed_socket_refuses_it() -> None:
    stream, peer = _pair()
    peer.close()
    with pytest.raises(trio.BrokenResourceError):
        write_now(stream, b"late")
    await stream.aclose()
    with pytest.raises(trio.ClosedResourceError):
        write_now(stream, b"later")


async def test_a_stream_that_is_not_a_plain_socket_is_left_to_send_all() -> None:
    ours, theirs = trio.testing.memory_stream_pair()
    assert write_now(ours, b"framed elsewhere") == 0
    await ours.send_all(b"sent")
    with trio.fail_after(_WAIT_S):
        assert await theirs.receive_some() == b"sent"
