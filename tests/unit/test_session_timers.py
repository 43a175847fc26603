"""The MCP sessions' own timers on trio's clock, driven by the autojump clock.

A :class:`~agentws.doors.mcp.sessions.supervisor.SessionSupervisor` closes a session that has
been idle for ``mcp_idle_s`` (an open stream or a request in flight is not
idle), and a session whose SSE reader takes nothing for ``sse_stall_s`` is
closed rather than buffered for. Both run on ``trio.current_time()``, so the
clock jumps over the wait instead of the test sitting through it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest
import trio
import trio.testing
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification

from agentws.doors.mcp.sessions.auth import Caller
from agentws.doors.mcp.sessions.replay import Event
from agentws.doors.mcp.sessions.supervisor import STREAM_BUFFER, McpSession, SessionSupervisor
from agentws.settings.config import Settings
from tests.unit.supervisor_support import make_caller, running_supervisor

IDLE_S = 60.0
STALL_S = 30.0


def _supervisor(caller: Caller) -> AbstractAsyncContextManager[SessionSupervisor]:
    settings = Settings(mcp_idle_s=IDLE_S, sse_stall_s=STALL_S)
    return running_supervisor(settings, "timers")


async def test_an_idle_session_expires_after_mcp_idle_s(
    autojump_clock: trio.testing.MockClock,
) -> None:
    caller = make_caller()
    async with _supervisor(caller) as supervisor:
        session = await supervisor.open(caller, "streamable")
        opened = trio.current_time()
        await trio.sleep(IDLE_S - 1)
        assert supervisor.get(session.id) is session
        # Activity restarts the wait.
        session.forget("no-such-request")
        touched = trio.current_time()
        await trio.sleep(IDLE_S - 1)
        assert supervisor.get(session.id) is session
        with trio.fail_after(2 * IDLE_S):
            await session.ended.wait()
        assert trio.current_time() - touched == pytest.approx(IDLE_S)
        assert trio.current_time() - opened > IDLE_S
        assert supervisor.get(session.id) is None
        assert len(supervisor) == 0


async def test_a_session_with_an_open_stream_is_never_idle(
    autojump_clock: trio.testing.MockClock,
) -> None:
    caller = make_caller()
    async with _supervisor(caller) as supervisor:
        session = await supervisor.open(caller, "sse")
        stream = session.open_stream()
        assert stream is not None
        await trio.sleep(3 * IDLE_S)
        assert supervisor.get(session.id) is session
        session.leave(stream)
        detached = trio.current_time()
        with trio.fail_after(2 * IDLE_S):
            await session.ended.wait()
        assert trio.current_time() - detached == pytest.approx(IDLE_S)
        assert supervisor.get(session.id) is None


def _notification(n: int) -> SessionMessage:
    return SessionMessage(
        message=JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"n": n})
    )


@asynccontextmanager
async def _session() -> AsyncIterator[McpSession]:
    session = McpSession(id="test.stalls", caller=make_caller(), transport="sse", stall_s=STALL_S)
    try:
        yield session
    finally:
        session.close()


async def _route_forever(session: McpSession) -> None:
    """Send the session more messages than its stream holds, until it is closed."""
    n = 0
    while not session.ended.is_set():
        await session.send(_notification(n))
        n += 1


async def test_a_reader_that_takes_nothing_for_sse_stall_s_is_cut_off(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with _session() as session:
        stream = session.open_stream()
        assert stream is not None
        started = trio.current_time()
        with trio.fail_after(2 * STALL_S):
            await _route_forever(session)
        assert session.ended.is_set()
        # The stream's buffer filled at once; then the router waited STALL_S for the reader.
        assert trio.current_time() - started == pytest.approx(STALL_S)
        assert len([m async for m in _drain(stream.receive)]) == STREAM_BUFFER


async def test_a_slow_reader_that_keeps_reading_is_not_cut_off(
    autojump_clock: trio.testing.MockClock,
) -> None:
    read = 0
    async with _session() as session, trio.open_nursery() as nursery:
        stream = session.open_stream()
        assert stream is not None
        nursery.start_soon(_route_forever, session)
        for _ in range(3 * STREAM_BUFFER):
            await trio.sleep(STALL_S * 0.9)
            await stream.receive.receive()
            read += 1
        assert not session.ended.is_set()
        session.close()
    assert read == 3 * STREAM_BUFFER


async def _drain(stream: trio.MemoryReceiveChannel[Event]) -> AsyncIterator[Event]:
    while True:
        try:
            yield stream.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            return
