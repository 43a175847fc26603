"""A call beyond an OAuth token's scope: a 403 scope challenge the client can step up from.

A remote MCP connector gives the group a write tool; an OAuth client
consented to at ``read`` calls it. The answer is HTTP 403 with
``WWW-Authenticate: Bearer error="insufficient_scope", scope="read write"``
(before the call reaches the session, on a session's POST and on a
stateless 2026-07-28 request alike); a static token of the same scope is
refused as today, with a tool error. The SDK's client, challenged, asks for
consent again and carries on in the same session with its new token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentws.domain.models import Approval, AuditEntry, Capability
from tests.e2e.mcp_support import running
from tests.e2e.oauth_support import MemoryStorage, admin_browser, sdk_oauth, tokens_for
from tests.e2e.remote_support import (
    MODERN_LINK,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)

SETTINGS = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
MODERN = "2026-07-28"


def _call(name: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": {"q": "x"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"},
            },
        },
    }


async def test_an_oauth_call_beyond_scope_is_a_scope_challenge(tmp_path: Path) -> None:
    state = ThirdParty([tool("search", "Search", read_only_hint=True), tool("send", "Send")])
    async with (
        running(tmp_path, **SETTINGS) as server,
        third_party_server(state) as url,
        admin_browser(server) as browser,
    ):
        # Pinned at 2026-07-28: its callers here would be served over a handshake
        # link too, which, run alone, leaves a response stream to the garbage
        # collector (a ResourceWarning).
        await attach_remote(
            server.store, url, {"third_search": Capability.READ}, protocol=MODERN_LINK
        )
        _, tokens = await tokens_for(browser, scope="read")
        headers = {
            "Authorization": f"Bearer {tokens['access_token']}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
        }
        async with httpx2.AsyncClient(timeout=15) as http:
            refused = await http.post(
                server.url, json=_call("third_send"), headers={**headers, "Mcp-Name": "third_send"}
            )
            assert refused.status_code == 403
            challenge = refused.headers["www-authenticate"]
            assert 'error="insufficient_scope"' in challenge
            assert 'scope="read write"' in challenge
            assert "resource_metadata=" in challenge
            assert state.calls == []  # it never left agentws

            allowed = await http.post(
                server.url,
                json=_call("third_search"),
                headers={**headers, "Mcp-Name": "third_search"},
            )
            assert allowed.status_code == 200, allowed.text
            assert state.calls == ["search"]

            # A static token of the same scope keeps today's answer: a tool error.
            static = await http.post(
                server.url,
                json=_call("third_send"),
                headers={
                    **headers,
                    "Mcp-Name": "third_send",
                    "Authorization": f"Bearer {await _read_token(server)}",
                },
            )
            assert static.status_code == 200
            assert "permission denied" in static.text


async def _read_token(server: Any) -> str:
    from agentws.workspaces.admin import create_token

    issued = await create_token(
        server.store, "acme", "ops", name="reader", scope=Capability.READ, actor="t"
    )
    return issued.secret


async def test_the_sdk_client_steps_up_when_challenged(tmp_path: Path) -> None:
    state = ThirdParty([tool("search", "Search", read_only_hint=True), tool("send", "Send")])
    async with (
        running(tmp_path, **SETTINGS) as server,
        third_party_server(state) as url,
        admin_browser(server) as browser,
    ):
        # Pinned at 2026-07-28: its callers here would be served over a handshake
        # link too, which, run alone, leaves a response stream to the garbage
        # collector (a ResourceWarning).
        await attach_remote(
            server.store, url, {"third_search": Capability.READ}, protocol=MODERN_LINK
        )
        storage = MemoryStorage()
        auth = sdk_oauth(browser, server.url, storage, scope=["read", "write"])
        async with (
            httpx2.AsyncClient(auth=auth, timeout=15) as http,
            streamable_http_client(server.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            with trio.fail_after(15):
                await session.initialize()
                assert storage.tokens is not None and storage.tokens.scope == "read"
                sent = await session.call_tool("third_send", {"q": "x"})
        # Within the new scope the call goes where a write goes: to an administrator.
        assert not sent.is_error, sent
        [queued] = await server.store.select(Approval)
        assert queued.tool_name == "third_send"
        assert storage.tokens.scope == "read write"
        assert len(await server.store.select(AuditEntry, action="oauth.consent")) == 2
