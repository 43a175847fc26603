"""Sessions served message by message: no task while idle, their own work cancelled on close.

The supervisor runs the SDK's dispatcher for each session without a read
loop (:mod:`agentws.doors.mcp.sessions.dispatcher`): an idle session must hold no
task at all, and closing one session must cancel its running handlers and
nothing of another session's.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import trio
import trio.testing
from mcp.server.lowlevel.server import Server
from mcp.server.models import InitializationOptions
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification, JSONRPCRequest

from agentws.common.changes import ChangeFeed
from agentws.doors.mcp.sessions.replay import Connection
from agentws.doors.mcp.sessions.supervisor import McpSession, SessionSupervisor
from agentws.settings.config import Settings
from tests.unit.supervisor_support import LiveTokens, make_caller

_INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "tests", "version": "1"},
}


class _Calls:
    """A tool ``wait`` that runs until cancelled, and what became of each call."""

    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0
        self.running = trio.Event()

    async def call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        self.started += 1
        self.running.set()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            self.cancelled += 1
            raise
        raise AssertionError("unreachable")


def _supervisor(calls: _Calls) -> tuple[SessionSupervisor, InitializationOptions]:
    store = LiveTokens()
    server: Server[McpSession] = Server("dispatch", on_call_tool=calls.call_tool)
    options = server.create_initialization_options()
    supervisor = SessionSupervisor(
        Settings(),
        store,
        server,
        options,
        ChangeFeed(store),
    )
    return supervisor, options


async def _request(session: McpSession, request_id: int, method: str, params: Any) -> Connection:
    message = JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params=params)
    return await session.request(SessionMessage(message), str(request_id))


async def _initialized(supervisor: SessionSupervisor) -> McpSession:
    session = await supervisor.open(make_caller(), "streamable")
    replies = await _request(session, 1, "initialize", _INIT)
    with trio.fail_after(5):
        _, data, last = await replies.receive.receive()
    assert last and '"protocolVersion":"2025-06-18"' in data
    session.forget("1", replies.stream)
    await session.submit(
        SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"))
    )
    return session


async def _settled(nursery: trio.Nursery, tasks: int) -> None:
    """Once every task waits on something outside, the nursery runs ``tasks`` tasks."""
    await trio.testing.wait_all_tasks_blocked()
    assert len(nursery.child_tasks) == tasks


async def test_idle_sessions_hold_no_task() -> None:
    supervisor, _ = _supervisor(_Calls())
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.serve)
        sessions_nursery = supervisor._nursery
        assert sessions_nursery is not None
        idle = len(sessions_nursery.child_tasks)
        sessions = [await _initialized(supervisor) for _ in range(50)]
        await _settled(sessions_nursery, idle)
        assert len(supervisor) == 50
        assert all(s.protocol_version == "2025-06-18" for s in sessions)
        supervisor.close_all()


async def test_closing_a_session_cancels_its_calls_and_no_other() -> None:
    calls = _Calls()
    supervisor, _ = _supervisor(calls)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.serve)
        sessions_nursery = supervisor._nursery
        assert sessions_nursery is not None
        idle = len(sessions_nursery.child_tasks)
        doomed, kept = await _initialized(supervisor), await _initialized(supervisor)
        replies = {}
        for session in (doomed, kept):
            calls.running = trio.Event()
            replies[session.id] = await _request(
                session, 2, "tools/call", {"name": "wait", "arguments": {}}
            )
            with trio.fail_after(5):
                await calls.running.wait()
        assert calls.started == 2
        assert len(sessions_nursery.child_tasks) == idle + 2

        doomed.close()
        await _settled(sessions_nursery, idle + 1)
        assert calls.cancelled == 1
        assert supervisor.get(doomed.id) is None and supervisor.get(kept.id) is kept
        # The closed session's call ends its stream without an answer to wait for.
        with trio.fail_after(5):
            assert [event async for event in replies[doomed.id].receive] == []

        # The other session's call runs on until the client cancels it.
        await kept.submit(
            SessionMessage(
                JSONRPCNotification(
                    jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 2}
                )
            )
        )
        await _settled(sessions_nursery, idle)
        assert calls.cancelled == 2
        assert not kept.ended.is_set()
        supervisor.close_all()
