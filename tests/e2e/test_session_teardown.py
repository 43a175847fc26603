"""A closed MCP session and its ended connection are freed at once, not left to the collector.

Ten thousand sessions revoked at once leave whatever of them sits in a
reference cycle to one pass of the cycle collector, which then holds the
event loop for seconds. So nothing of a session (its serving by the SDK,
its streams) nor of its HTTP connection may be in a cycle once they end.
The collector is off throughout: what is freed here is freed by reference
counting. The same holds for a stateless call: hundreds a second, each one
left in a cycle would keep the collector busy with all it held.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path

import httpx2
import pytest
import trio
from mcp.server.runner import ServerRunner

from agentws.bridges.hypercorn_bridge import BridgedTCPServer
from agentws.doors.mcp.sessions.session import McpSession
from agentws.doors.mcp.sessions.supervisor import _CANCEL_BATCH
from tests.e2e.mcp_support import (
    MODERN,
    REQUEST_S,
    jsonrpc_answer,
    legacy_stream,
    raw_request,
    running,
)
from tests.e2e.polling import wait_for
from tests.e2e.test_mcp_transport import ACCEPT, INITIALIZE

PATIENCE_S = 30.0


@pytest.fixture
def no_collector() -> Iterator[None]:
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _connections() -> int:
    return _count(BridgedTCPServer)


def _count(kind: type) -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, kind))


async def test_a_revoked_sessions_objects_and_connections_are_freed_without_the_collector(
    tmp_path: Path, no_collector: None
) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        headers = {**server.headers(), "Accept": ACCEPT}
        answer = await http.post(server.url, json=INITIALIZE, headers=headers)
        assert answer.status_code == 200, answer.text
        headers["Mcp-Session-Id"] = session_id = answer.headers["mcp-session-id"]
        headers["Mcp-Protocol-Version"] = "2025-06-18"
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(server.url, json=initialized, headers=headers)).status_code == 202
        listed = await http.post(
            server.url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
        )
        assert "tools" in jsonrpc_answer(listed)["result"]
        await http.aclose()  # its connections end here, not with the sessions
        await wait_for(lambda: _connections() == 0, what="the client's connections freed")

        path = server.url.removeprefix(server.base_url)
        stream_headers = {**headers, "Accept": "text/event-stream"}
        async with (
            raw_request(server, "GET", path, stream_headers) as stream,
            legacy_stream(server) as (legacy_id, legacy),
        ):
            assert stream.status == 200
            sessions = [server.runtime.sessions.get(s) for s in (session_id, legacy_id)]
            assert all(isinstance(s, McpSession) for s in sessions)
            freed = [weakref.ref(s) for s in sessions]
            token_id = sessions[0].token_id  # type: ignore[union-attr]
            del sessions
            assert _connections() == 2

            assert server.runtime.sessions.revoke(token_id) == 2
            with trio.fail_after(PATIENCE_S):
                await stream.read_to_end()
                await legacy.read_to_end()
        # The client has hung up both connections: they end on the server too.
        await wait_for(lambda: _connections() == 0, what="the connections freed")
        await wait_for(lambda: all(ref() is None for ref in freed), what="the sessions freed")


async def test_a_mass_closes_held_responses_unwind_and_their_connections_end(
    tmp_path: Path, no_collector: None
) -> None:
    """More streams than one batch: the responses wait for every end, then unwind and
    their connections end once the clients hang up, with nothing left for the collector."""
    streams = _CANCEL_BATCH + _CANCEL_BATCH // 2
    async with (
        running(
            tmp_path, with_library=False, AGENTWS_MCP_MAX_SESSIONS_PER_TOKEN=str(2 * streams)
        ) as server,
        AsyncExitStack() as opened,
    ):
        held = [await opened.enter_async_context(legacy_stream(server)) for _ in range(streams)]
        sessions = [server.runtime.sessions.get(session_id) for session_id, _ in held]
        assert all(isinstance(s, McpSession) for s in sessions)
        freed = [weakref.ref(s) for s in sessions]
        token_id = sessions[0].token_id  # type: ignore[union-attr]
        del sessions
        assert _connections() == streams

        assert server.runtime.sessions.revoke(token_id) == streams
        with trio.fail_after(PATIENCE_S):
            for _, response in held:
                await response.read_to_end()
        await opened.aclose()  # the clients hang up
        await wait_for(lambda: _connections() == 0, what="the connections freed")
        await wait_for(lambda: all(ref() is None for ref in freed), what="the sessions freed")


async def test_stateless_calls_leave_nothing_to_the_collector(
    tmp_path: Path, no_collector: None
) -> None:
    """Each stateless ``tools/call`` is served by a runner of its own: it and all the
    request held are freed by reference counting as the call ends."""
    calls = 5
    envelope = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    async with running(tmp_path) as server:
        headers = {
            **server.headers(),
            "Accept": ACCEPT,
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
            "Mcp-Name": "search_context",
        }
        async with httpx2.AsyncClient(timeout=REQUEST_S) as http:
            before = _count(ServerRunner)
            for n in range(calls):
                params = {
                    "name": "search_context",
                    "arguments": {"query": "refund"},
                    "_meta": envelope,
                }
                body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}
                answer = await http.post(server.url, json=body, headers=headers)
                assert answer.status_code == 200, answer.text
                assert jsonrpc_answer(answer)["result"]["resultType"] == "complete"
        assert _count(ServerRunner) == before
