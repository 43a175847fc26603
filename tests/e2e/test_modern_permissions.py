"""Permissions on the stateless revision (2026-07-28): the same gate, asked differently.

- a destructive call from a client that declared elicitation is answered
  ``input_required`` (one elicitation request, a one-time ``requestState``);
  the SDK client asks its callback and retries; the call runs only on
  "accept" with "confirm" ticked, and the state works once, for this token,
  tool and arguments;
- a client without elicitation gets the confirm-token result older clients get;
- a write call is queued exactly as for older clients, and its outcome is
  read back with ``get_approval`` from any request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
import trio
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged

from agentws.domain.models import Group
from agentws.workspaces.admin import create_token
from tests.e2e.mcp_support import MODERN, Running, modern_client
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, TIMEOUT_S
from tests.e2e.test_permissions import _admin, _confirming, _destructive_token, _served, _text

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)


def _envelope(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }


async def _call(server: Running, token: str, params: dict[str, Any]) -> dict[str, Any]:
    """One raw ``tools/call`` of the stateless revision; its JSON-RPC result."""
    headers = {
        **server.headers(token),
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": params["name"],
    }
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    async with httpx2.AsyncClient(timeout=TIMEOUT_S) as http:
        response = await http.post(server.url, content=json.dumps(body), headers=headers)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


async def test_a_destructive_call_asks_through_input_required(tmp_path: Path) -> None:
    asked: list[str] = []
    elicit = _confirming(["accept", "decline"], asked)

    async with _served(tmp_path) as (server, state):
        token = await _destructive_token(server, "ops-lead")
        async with modern_client(server, token=token, elicitation_callback=elicit) as client:
            with trio.fail_after(TIMEOUT_S):
                ran = await client.call_tool("third_drop", {"q": "users"})
            assert not ran.is_error, ran
            assert _text(ran) == "third-party found: users"
            assert "third_drop" in asked[0]
            assert '"users"' in asked[0]
            assert state.calls == ["drop"]

            with trio.fail_after(TIMEOUT_S):
                declined = await client.call_tool("third_drop", {"q": "orders"})
            assert (declined.structured_content or {})["status"] == "not_confirmed"
            assert state.calls == ["drop"]
            assert len(asked) == 2
        assert len(server.runtime.sessions) == 0


async def test_the_request_state_works_once_and_for_that_call_only(tmp_path: Path) -> None:
    elicitation = {"elicitation": {"form": {}}}
    yes = {"confirm": {"action": "accept", "content": {"confirm": True}}}
    async with _served(tmp_path) as (server, state):
        token = await _destructive_token(server, "ops-lead")
        other = await _destructive_token(server, "other")
        meta = _envelope(elicitation)
        call = {"name": "third_drop", "arguments": {"q": "users"}, "_meta": meta}

        asked = await _call(server, token, call)
        assert asked["resultType"] == "input_required"
        question = asked["inputRequests"]["confirm"]
        assert question["method"] == "elicitation/create"
        assert question["params"]["requestedSchema"]["required"] == ["confirm"]
        first_state = asked["requestState"]
        assert state.calls == []

        # Another bearer token, other arguments, a made-up state: refused, nothing runs.
        for token_used, arguments, request_state in [
            (other, {"q": "users"}, first_state),
            (token, {"q": "orders"}, (await _call(server, token, call))["requestState"]),
            (token, {"q": "users"}, "agwcf_made-up"),
        ]:
            refused = await _call(
                server,
                token_used,
                {
                    **call,
                    "arguments": arguments,
                    "inputResponses": yes,
                    "requestState": request_state,
                },
            )
            assert refused["isError"] is True, refused
            assert "Confirmation refused" in refused["content"][0]["text"]
        assert state.calls == []

        # A fresh state with a yes runs it; the same state again does not.
        fresh = (await _call(server, token, call))["requestState"]
        retry = {**call, "inputResponses": yes, "requestState": fresh}
        ran = await _call(server, token, retry)
        assert ran["resultType"] == "complete"
        assert not ran.get("isError"), ran
        assert state.calls == ["drop"]
        again = await _call(server, token, retry)
        assert again["isError"] is True
        assert state.calls == ["drop"]

        # A state without an answer runs nothing either.
        fresh = (await _call(server, token, call))["requestState"]
        unanswered = await _call(server, token, {**call, "requestState": fresh})
        assert unanswered["structuredContent"]["status"] == "not_confirmed"
        assert state.calls == ["drop"]


async def test_without_elicitation_a_confirm_token_is_given(tmp_path: Path) -> None:
    async with _served(tmp_path) as (server, state):
        token = await _destructive_token(server, "ops-lead")
        async with modern_client(server, token=token) as client:
            with trio.fail_after(TIMEOUT_S):
                asked = await client.call_tool("third_drop", {"q": "users"})
                data = asked.structured_content or {}
                assert data["status"] == "confirmation_required"
                assert state.calls == []
                ran = await client.call_tool(
                    "third_drop", {"q": "users", data["confirm_argument"]: data["confirm_token"]}
                )
            assert _text(ran) == "third-party found: users"
            assert state.calls == ["drop"]


async def test_a_write_call_is_queued_and_its_outcome_read_back(tmp_path: Path) -> None:
    async with _served(tmp_path) as (server, state), modern_client(server) as client:
        with trio.fail_after(TIMEOUT_S):
            queued = await client.call_tool("third_send", {"q": "hello"})
        data = queued.structured_content or {}
        assert data["status"] == "queued"
        approval_id = data["approval_id"]
        assert state.calls == []

        code, _, err = await _admin(server, tmp_path, "approval", "approve", approval_id)
        assert code == 0, err
        assert state.calls == ["send"]

        with trio.fail_after(TIMEOUT_S):
            later = await client.call_tool("get_approval", {"approval_id": approval_id})
        assert (later.structured_content or {})["status"] == "executed"
        assert "third-party found: hello" in _text(later)


async def test_a_listening_client_hears_when_its_queued_call_is_decided(tmp_path: Path) -> None:
    async with _served(tmp_path) as (server, state):
        other = await create_token(server.store, "acme", "ops", name="other", actor="t")
        async with (
            modern_client(server) as client,
            modern_client(server, token=other.secret) as stranger,
        ):
            with trio.fail_after(TIMEOUT_S):
                queued = await client.call_tool("third_send", {"q": "hello"})
            data = queued.structured_content or {}
            uri = data["uri"]
            assert uri == f"agentws://approvals/{data['approval_id']}"
            links = [c for c in queued.content if isinstance(c, types.ResourceLink)]
            assert [str(link.uri) for link in links] == [uri]

            # Only the token that queued the call reads it, or hears of it.
            with pytest.raises(MCPError) as refused:
                await stranger.read_resource(uri)
            # Not found, as 2026-07-28 says it (SEP-2164: Invalid Params with the URI).
            assert refused.value.error.code == types.INVALID_PARAMS
            assert refused.value.error.data == {"uri": uri}

            async with (
                client.listen(resource_subscriptions=[uri]) as mine,
                stranger.listen(resource_subscriptions=[uri], tools_list_changed=True) as theirs,
            ):
                assert mine.honored.resource_subscriptions == [uri]
                assert server.runtime.sessions.listens.awaited() == {data["approval_id"]}
                code, _, err = await _admin(
                    server, tmp_path, "approval", "approve", data["approval_id"]
                )
                assert code == 0, err
                with trio.fail_after(TIMEOUT_S):
                    event = await mine.__anext__()
                assert isinstance(event, ResourceUpdated)
                assert event.uri == uri
                # The stranger's stream hears the next event of the group, and nothing before.
                group = await server.store.find(Group, slug="ops")
                assert group is not None
                server.runtime.sessions.listens.publish(group.id, ToolsListChanged())
                with trio.fail_after(TIMEOUT_S):
                    assert isinstance(await theirs.__anext__(), ToolsListChanged)
            read = await client.read_resource(uri)
            content = read.contents[0]
            assert isinstance(content, types.TextResourceContents)
            outcome = json.loads(content.text)
            assert outcome["status"] == "executed"
            assert "third-party found: hello" in json.dumps(outcome["result"])
            assert state.calls == ["send"]
        assert len(server.runtime.sessions.listens) == 0


async def test_shutdown_ends_listen_streams_gracefully(tmp_path: Path) -> None:
    async with (
        _served(tmp_path) as (server, _),
        modern_client(server) as client,
        client.listen(tools_list_changed=True) as subscription,
    ):
        assert len(server.runtime.sessions.listens) == 1
        server.runtime.sessions.close_all()
        with trio.fail_after(TIMEOUT_S):
            events = [event async for event in subscription]
        assert events == []
