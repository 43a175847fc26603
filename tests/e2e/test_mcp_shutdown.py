"""``agentws serve`` with MCP sessions and connector links open: SIGTERM ends every stream,
closes every outbound connection, and exits 0 in time."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx2
import pytest
import trio

from agentws.store import open_store
from agentws.workspaces.admin import create_group, create_token, create_workspace
from tests.e2e.polling import wait_for
from tests.e2e.remote_support import MODERN_LINK, ThirdParty, add_remote, third_party_server, tool
from tests.e2e.test_serve import EXIT_SLACK_S, GRACE_S, REQUEST_S, running_serve

ACCEPT = "application/json, text/event-stream"


async def _token(database_url: str) -> str:
    async with open_store(database_url) as store:
        await create_workspace(store, "acme", name=None, actor="t")
        await create_group(store, "acme", "ops", name=None, actor="t")
        return (await create_token(store, "acme", "ops", name="t", actor="t")).secret


async def test_sigterm_with_open_sessions_ends_their_streams_and_exits_0(
    tmp_path: Path, sqlite_url: str
) -> None:
    token = await _token(sqlite_url)
    auth = {"Authorization": f"Bearer {token}"}
    async with (
        running_serve(tmp_path, sqlite_url) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        url = f"{server.base_url}/mcp/g/acme/ops"
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        opened = await http.post(url, json=initialize, headers={**auth, "Accept": ACCEPT})
        assert opened.status_code == 200
        session_id = opened.headers["mcp-session-id"]
        ended = trio.Event()
        lines: list[str] = []

        async def hold(
            url: str, headers: dict[str, str], task_status: trio.TaskStatus[None]
        ) -> None:
            async with http.stream("GET", url, headers=headers) as response:
                assert response.status_code == 200
                task_status.started()
                async for chunk in response.aiter_raw():
                    lines.append(chunk.decode())
            ended.set()

        async with trio.open_nursery() as nursery:
            await nursery.start(hold, url, {**auth, "Accept": "text/event-stream"})
            await nursery.start(
                hold, url, {**auth, "Accept": "text/event-stream", "Mcp-Session-Id": session_id}
            )
            sent_at = trio.current_time()
            code = await server.stop(signal.SIGTERM)
            with trio.fail_after(GRACE_S + EXIT_SLACK_S):
                await ended.wait()
        assert code == 0
        assert trio.current_time() - sent_at < GRACE_S + EXIT_SLACK_S
        assert "event: endpoint" in "".join(lines)
        assert "Traceback" not in server.stderr()


@pytest.mark.parametrize("handshake_only", [True, False], ids=["handshake", "modern"])
async def test_sigterm_closes_the_links_to_remote_mcp_servers(
    tmp_path: Path, sqlite_url: str, handshake_only: bool
) -> None:
    state = ThirdParty([tool("search", "Search")], handshake_only=handshake_only)
    # The link holds a stream open: the session's GET stream, or (2026-07-28)
    # the response to its subscriptions/listen.
    held = "GET" if handshake_only else "POST"
    await _token(sqlite_url)
    async with third_party_server(state) as remote_url:
        async with open_store(sqlite_url) as store:
            # A remote of both eras is linked at 2026-07-28 only when pinned.
            await add_remote(store, remote_url, protocol="auto" if handshake_only else MODERN_LINK)
        env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32"}
        async with running_serve(tmp_path, sqlite_url, **env) as server:
            # The service links the connector as it starts and holds its stream.
            await wait_for(
                lambda: state.open_requests.get(held) == 1, timeout_s=REQUEST_S, what="the link"
            )
            sent_at = trio.current_time()
            code = await server.stop(signal.SIGTERM)
            assert code == 0
            assert trio.current_time() - sent_at < GRACE_S + EXIT_SLACK_S
            await wait_for(
                lambda: state.open_requests.get(held) == 0,
                timeout_s=REQUEST_S,
                what="the remote to see the link closed",
            )
            assert "Traceback" not in server.stderr()
