"""Confirm tokens for one-shot MCP clients: one session per call, any instance.

Clients such as the MCP Inspector's command line open a new MCP session for
every call. A destructive call confirmed by token must still work for them:
the token is bound to the bearer token, the tool and the arguments' hash
(not to the session), works once, and only within ``AGENTWS_CONFIRM_TTL_S``.
With several instances on one PostgreSQL database, the confirming call may
reach another instance than the one that gave the token.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import httpx2
import mcp.client.session
import mcp_types as types
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentws.domain.models import Capability, ConfirmToken
from agentws.domain.rules import hash_secret
from agentws.settings.secret_box import ensure_key_file
from agentws.store import open_store
from agentws.workspaces.admin import create_token
from tests.e2e.mcp_support import Running, running, sdk_session, seed
from tests.e2e.process_support import serve_process
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    TIMEOUT_S,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.support import migrated_schema

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

LABELS = {"third_drop": Capability.DESTRUCTIVE}
CLIENTS = [("sse", "2024-11-05"), ("streamable", "2025-03-26")]


def _tools() -> list[types.Tool]:
    return [tool("drop", "Drop the table", destructive_hint=True), tool("wipe", "Wipe it")]


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


@attrs.frozen
class OneShot:
    """Calls as a one-shot client makes them: each in a new session of its own."""

    server: Running
    transport: str
    token: str

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        async with sdk_session(self.server, self.transport, token=self.token) as session:
            with trio.fail_after(TIMEOUT_S):
                return await session.call_tool(name, arguments)


async def _asked(result: types.CallToolResult) -> str:
    data = result.structured_content or {}
    assert not result.is_error, result
    assert data["status"] == "confirmation_required", result
    return str(data["confirm_token"])


@pytest.mark.parametrize(("transport", "version"), CLIENTS, ids=[t for t, _ in CLIENTS])
async def test_a_one_shot_client_confirms_a_destructive_call_in_a_new_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport: str, version: str
) -> None:
    # No elicitation capability: the confirm-token round trip.
    monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", version)
    ensure_key_file(tmp_path)
    state = ThirdParty(_tools())
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
    async with (
        running(tmp_path, with_library=False, AGENTWS_DATA_DIR=str(tmp_path), **env) as server,
        third_party_server(state) as url,
    ):
        await attach_remote(server.store, url, {**LABELS, "third_wipe": Capability.DESTRUCTIVE})
        mine = await create_token(
            server.store, "acme", "ops", name="lead", scope=Capability.DESTRUCTIVE, actor="t"
        )
        other = await create_token(
            server.store, "acme", "ops", name="other", scope=Capability.DESTRUCTIVE, actor="t"
        )
        me = OneShot(server, transport, mine.secret)
        intruder = OneShot(server, transport, other.secret)

        token = await _asked(await me.call("third_drop", {"q": "users"}))
        # Another bearer token cannot use it (and does not use it up).
        refused = await intruder.call("third_drop", {"q": "users", "_confirm_token": token})
        assert refused.is_error
        assert "Confirmation refused" in _text(refused)
        assert state.calls == []

        # The right call, in yet another session: it runs, once.
        ran = await me.call("third_drop", {"q": "users", "_confirm_token": token})
        assert not ran.is_error, ran
        assert _text(ran) == "third-party found: users"
        assert state.arguments == [{"q": "users"}]  # the token never reaches the upstream
        again = await me.call("third_drop", {"q": "users", "_confirm_token": token})
        assert again.is_error
        assert "used already" in _text(again)

        # Other arguments, another tool: refused, and the token is used up.
        token = await _asked(await me.call("third_drop", {"q": "users"}))
        refused = await me.call("third_drop", {"q": "everyone", "_confirm_token": token})
        assert "another call" in _text(refused)
        token = await _asked(await me.call("third_drop", {"q": "users"}))
        refused = await me.call("third_wipe", {"q": "users", "_confirm_token": token})
        assert "another call" in _text(refused)
        refused = await me.call("third_drop", {"q": "users", "_confirm_token": token})
        assert "used already" in _text(refused)

        # Past its time: refused.
        token = await _asked(await me.call("third_drop", {"q": "users"}))
        kept = await server.store.get(ConfirmToken, hash_secret(token))
        await server.store.update(
            attrs.evolve(kept, expires_at=kept.expires_at - timedelta(seconds=301))
        )
        refused = await me.call("third_drop", {"q": "users", "_confirm_token": token})
        assert "expired" in _text(refused)
        assert state.calls == ["drop"]


@asynccontextmanager
async def _session(base_url: str, token: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as http,
        streamable_http_client(f"{base_url}/mcp/g/acme/ops", http_client=http) as (r, w),
        ClientSession(r, w) as session,
    ):
        with trio.fail_after(TIMEOUT_S):
            await session.initialize()
        yield session


@pytest.mark.postgres
async def test_a_token_given_by_one_instance_confirms_the_call_on_another(
    tmp_path: Path,
) -> None:
    ensure_key_file(tmp_path)
    state = ThirdParty(_tools())
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
    async with migrated_schema() as url, third_party_server(state) as remote:
        async with open_store(url) as store:
            await seed(store, tmp_path, with_library=False)
            await attach_remote(store, remote, LABELS)
            lead = await create_token(
                store, "acme", "ops", name="lead", scope=Capability.DESTRUCTIVE, actor="t"
            )
        async with (
            serve_process(tmp_path, url, "inst-a", **env) as a,
            serve_process(tmp_path, url, "inst-b", **env) as b,
        ):
            async with _session(a.base_url, lead.secret) as session:
                with trio.fail_after(TIMEOUT_S):
                    token = await _asked(await session.call_tool("third_drop", {"q": "users"}))
            async with _session(b.base_url, lead.secret) as session:
                with trio.fail_after(TIMEOUT_S):
                    ran = await session.call_tool(
                        "third_drop", {"q": "users", "_confirm_token": token}
                    )
                    assert not ran.is_error, ran
                    again = await session.call_tool(
                        "third_drop", {"q": "users", "_confirm_token": token}
                    )
            assert "used already" in _text(again)
    assert state.calls == ["drop"]
