"""One token cannot take every place: per-token caps on pending calls and listen streams.

Stateless (2026-07-28) clients hold places of the process in two ways: a
remote tool's call whose question they leave unanswered waits up to
``AGENTWS_CONFIRM_TTL_S`` for them, and a ``subscriptions/listen`` stream
stays open. Each token has its own share of both
(``AGENTWS_MCP_MAX_PENDING_PER_TOKEN``, ``AGENTWS_MCP_MAX_LISTEN_PER_TOKEN``)
inside the process's (``AGENTWS_MCP_MAX_SESSIONS``), so another token's calls
and streams still get through; a full cap answers a retryable error that
says so (a tool error for a call, a JSON-RPC error with ``retryAfter`` for a
stream), never ``-32603 internal error``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from agentws.domain.models import Capability
from agentws.workspaces.admin import create_token
from tests.e2e.mcp_support import MODERN, RawStream, Running, raw_request, running
from tests.e2e.relay_support import TOOLS, Remote, remote_server
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, TIMEOUT_S, attach_remote

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

ENV = {
    "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
    "AGENTWS_TOOL_TIMEOUT_S": "10",
    "AGENTWS_MCP_MAX_SESSIONS": "6",
    "AGENTWS_MCP_MAX_PENDING_PER_TOKEN": "4",
    "AGENTWS_MCP_MAX_LISTEN_PER_TOKEN": "4",
}
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}


@asynccontextmanager
async def _served(tmp_path: Path) -> AsyncIterator[tuple[Running, str]]:
    async with (
        running(tmp_path, with_library=False, **ENV) as server,
        remote_server(Remote()) as url,
    ):
        await attach_remote(server.store, url, {f"third_{t.name}": Capability.READ for t in TOOLS})
        other = await create_token(server.store, "acme", "ops", name="other", actor="t")
        yield server, other.secret


def _request(server: Running, token: str, method: str, params: dict[str, Any], n: int) -> Any:
    headers = {
        **server.headers(token),
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if method == "tools/call":
        headers["Mcp-Name"] = params["name"]
    body = {"jsonrpc": "2.0", "id": n, "method": method, "params": {**params, "_meta": META}}
    return raw_request(server, "POST", "/mcp/g/acme/ops", headers, json.dumps(body).encode())


async def _message(response: RawStream) -> dict[str, Any]:
    """The first JSON-RPC message of a response (JSON, or the first SSE event's data)."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return dict(json.loads(await response.read_body()))
    while (line := await response.read_line()) is not None:
        if line.startswith("data:"):
            return dict(json.loads(line.removeprefix("data:")))
    raise AssertionError("the stream ended without a message")


async def _ask(server: Running, token: str, n: int) -> dict[str, Any]:
    """A remote call that asks its client a question, left unanswered: its answer."""
    async with _request(server, token, "tools/call", {"name": "third_ask"}, n) as response:
        assert response.status == 200
        return await _message(response)


async def test_one_token_cannot_take_every_pending_call(tmp_path: Path) -> None:
    async with _served(tmp_path) as (server, other):
        with trio.fail_after(TIMEOUT_S):
            for n in range(4):
                held = await _ask(server, server.token, n)
                assert held["result"]["resultType"] == "input_required", held
            # Its fifth is refused, retryably, naming the limit.
            refused = (await _ask(server, server.token, 5))["result"]
            assert refused["isError"] is True
            text = refused["content"][0]["text"]
            assert "AGENTWS_MCP_MAX_PENDING_PER_TOKEN" in text and "retry" in text
            assert refused["structuredContent"]["retry_after_s"] > 0
            # Another token's calls still get through, up to the process's limit.
            for n in range(2):
                held = await _ask(server, other, 10 + n)
                assert held["result"]["resultType"] == "input_required", held
            full = (await _ask(server, other, 20))["result"]
            assert full["isError"] is True
            assert "AGENTWS_MCP_MAX_SESSIONS" in full["content"][0]["text"]


async def test_one_token_cannot_take_every_listen_stream(tmp_path: Path) -> None:
    listen = {"notifications": {"toolsListChanged": True}}
    async with _served(tmp_path) as (server, other), AsyncExitStack() as streams:
        with trio.fail_after(TIMEOUT_S):
            for n in range(4):
                stream = await streams.enter_async_context(
                    _request(server, server.token, "subscriptions/listen", listen, n)
                )
                acknowledged = await _message(stream)
                assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
            async with _request(server, server.token, "subscriptions/listen", listen, 5) as over:
                error = (await _message(over))["error"]
            assert error["code"] != -32603
            assert "AGENTWS_MCP_MAX_LISTEN_PER_TOKEN" in error["message"]
            assert error["data"]["retryAfter"] > 0
            for n in range(2):
                stream = await streams.enter_async_context(
                    _request(server, other, "subscriptions/listen", listen, 10 + n)
                )
                acknowledged = await _message(stream)
                assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
            async with _request(server, other, "subscriptions/listen", listen, 20) as full:
                error = (await _message(full))["error"]
            assert error["code"] != -32603
            assert "AGENTWS_MCP_MAX_SESSIONS" in error["message"]
