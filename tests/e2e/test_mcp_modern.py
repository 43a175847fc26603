"""The stateless revision (2026-07-28) on the group endpoint, beside the handshake ones.

The SDK's own client, pinned to the modern era (``mode="2026-07-28"``) and in
``auto`` mode (``server/discover`` first), against the real app: discovery,
tools, resources and prompts with no ``initialize`` and no session; then the
wire itself with raw HTTP: header validation, the version error that lists
what is served, ``resultType`` on results, and that no request leaves a
session behind; and a ``subscriptions/listen`` stream hearing its group's
lists and a followed document change.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
import trio
from mcp.shared.subscriptions import ResourceUpdated

from agentws import libraries
from tests.e2e.mcp_support import (
    ACTOR,
    HANDBOOK_DOCS,
    MODERN,
    REQUEST_S,
    SKILL_PROMPT,
    Running,
    modern_client,
    running,
)
from tests.e2e.notifications_support import add_handbook_document, change_until_heard


def _envelope(**extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        **extra,
    }


def _headers(server: Running, method: str, name: str | None = None) -> dict[str, str]:
    headers = {
        **server.headers(),
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


async def _post(
    server: Running, method: str, params: dict[str, Any], *, headers: dict[str, str] | None = None
) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with httpx2.AsyncClient(timeout=REQUEST_S) as http:
        return await http.post(
            server.url, content=json.dumps(body), headers=headers or _headers(server, method)
        )


@pytest.mark.parametrize("mode", [MODERN, "auto"])
async def test_a_modern_client_lists_and_calls_without_a_session(tmp_path: Path, mode: str) -> None:
    async with running(tmp_path) as server, modern_client(server, mode=mode) as client:
        with trio.fail_after(REQUEST_S):
            assert client.session.protocol_version == MODERN
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == {"search_context", "read_context_document"}
            found = await client.call_tool("search_context", {"query": "refund", "limit": 5})
            assert not found.is_error
            assert any(
                isinstance(c, types.TextContent) and "Refund policy" in c.text
                for c in found.content
            )
            resources = (await client.list_resources()).resources
            refunds = next(r for r in resources if str(r.uri) == "agentws://handbook/refunds")
            read = await client.read_resource(refunds.uri)
            content = read.contents[0]
            assert isinstance(content, types.TextResourceContents)
            assert content.text == HANDBOOK_DOCS["refunds"][1]
            prompts = (await client.list_prompts()).prompts
            assert [p.name for p in prompts] == ["triage"]
            prompt = await client.get_prompt("triage")
            first = prompt.messages[0].content
            assert isinstance(first, types.TextContent)
            assert first.text == SKILL_PROMPT
        # Nothing of these requests stays behind on the server.
        assert len(server.runtime.sessions) == 0


async def test_server_discover_answers_what_the_endpoint_speaks(tmp_path: Path) -> None:
    async with running(tmp_path) as server:
        response = await _post(server, "server/discover", {"_meta": _envelope()})
        assert response.status_code == 200, response.text
        assert "mcp-session-id" not in response.headers
        result = response.json()["result"]
        assert MODERN in result["supportedVersions"]
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "agentws"
        assert "tools" in result["capabilities"]
        assert result["resultType"] == "complete"


async def test_every_result_says_its_result_type(tmp_path: Path) -> None:
    async with running(tmp_path) as server:
        response = await _post(
            server,
            "tools/call",
            {"name": "search_context", "arguments": {"query": "refund"}, "_meta": _envelope()},
            headers=_headers(server, "tools/call", "search_context"),
        )
        assert response.status_code == 200, response.text
        assert response.json()["result"]["resultType"] == "complete"


async def test_an_unknown_version_is_refused_with_the_versions_served(tmp_path: Path) -> None:
    async with running(tmp_path) as server:
        headers = {**_headers(server, "tools/list"), "MCP-Protocol-Version": "2099-01-01"}
        envelope = _envelope(**{"io.modelcontextprotocol/protocolVersion": "2099-01-01"})
        response = await _post(server, "tools/list", {"_meta": envelope}, headers=headers)
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == types.UNSUPPORTED_PROTOCOL_VERSION
        # What server/discover lists: the stateless revisions (initialize finds the others).
        assert error["data"] == {"supported": [MODERN], "requested": "2099-01-01"}


async def test_a_header_that_disagrees_with_the_body_is_refused(tmp_path: Path) -> None:
    async with running(tmp_path) as server:
        headers = {**_headers(server, "tools/list"), "Mcp-Method": "prompts/list"}
        response = await _post(server, "tools/list", {"_meta": _envelope()}, headers=headers)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == types.HEADER_MISMATCH


async def test_modern_requests_are_authenticated_like_any_other(tmp_path: Path) -> None:
    async with running(tmp_path) as server:
        headers = {**_headers(server, "tools/list"), "Authorization": "Bearer agws_wrong"}
        response = await _post(server, "tools/list", {"_meta": _envelope()}, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        # Another group's token does not reach this group's tools either.
        other = {**_headers(server, "tools/list"), **server.headers(server.other_token)}
        response = await _post(server, "tools/list", {"_meta": _envelope()}, headers=other)
        assert response.status_code in (401, 403)


async def test_handshake_clients_still_get_sessions(tmp_path: Path) -> None:
    async with running(tmp_path) as server, modern_client(server, mode="legacy") as client:
        with trio.fail_after(REQUEST_S):
            assert client.session.protocol_version == "2025-11-25"
            assert len((await client.list_tools()).tools) == 2
            assert len(server.runtime.sessions) == 1


async def test_a_listening_client_hears_its_group_change(tmp_path: Path) -> None:
    heard: list[object] = []
    arrived = trio.Event()
    n = itertools.count()

    class Events:
        """What the listen stream brought, as notifications_support.Heard expects."""

        def methods(self) -> list[str]:
            return [type(event).__name__ for event in heard]

        async def wait_for(self, predicate: Callable[[], bool]) -> bool:
            while not predicate():
                await arrived.wait()
            return True

    events = Events()
    async with running(tmp_path) as server, modern_client(server) as client:
        store = server.store
        refunds = "agentws://handbook/refunds"
        async with (
            client.listen(
                tools_list_changed=True,
                resources_list_changed=True,
                prompts_list_changed=True,
                resource_subscriptions=[refunds],
            ) as subscription,
            trio.open_nursery() as nursery,
        ):

            async def collect() -> None:
                nonlocal arrived
                async for event in subscription:
                    heard.append(event)
                    arrived.set()
                    arrived = trio.Event()

            nursery.start_soon(collect)

            async def add_document() -> None:
                await add_handbook_document(store, f"new-{next(n)}")

            await change_until_heard(
                events, add_document, lambda: "ResourcesListChanged" in events.methods()
            )

            async def edit_refunds() -> None:
                await libraries.add_document(
                    store,
                    "acme",
                    "handbook",
                    slug="refunds",
                    title="Refund policy",
                    body=f"Changed {next(n)}",
                    policy="on_demand",
                    replace=True,
                    actor=ACTOR,
                )

            await change_until_heard(
                events,
                edit_refunds,
                lambda: any(isinstance(e, ResourceUpdated) and e.uri == refunds for e in heard),
            )

            async def detach() -> None:
                await libraries.detach_library(store, "acme", "ops", "handbook", actor=ACTOR)

            await change_until_heard(events, detach, lambda: "ToolsListChanged" in events.methods())
            nursery.cancel_scope.cancel()
        with trio.fail_after(REQUEST_S):
            assert (await client.list_tools(cache_mode="bypass")).tools == []
