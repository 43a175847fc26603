"""What a group endpoint offers, through the SDK's own clients over both transports.

Tools (the context built-ins), resources (documents by policy) and prompts
(skills with their assets), on protocol 2024-11-05 over legacy SSE and on the
newest handshake version the SDK offers over Streamable HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import mcp.client.session
import mcp_types as types
import pytest
import trio
from mcp.shared.exceptions import MCPError
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from agentws.domain.models import (
    CachedTool,
    Capability,
    Connector,
    ConnectorKind,
    GroupConnector,
)
from tests.e2e.mcp_support import (
    HANDBOOK_DOCS,
    REQUEST_S,
    SKILL_ASSETS,
    SKILL_PROMPT,
    running,
    sdk_session,
)
from tests.support import migrated_schema_sync

# (transport, protocol version the client offers)
CLIENTS = [("sse", "2024-11-05"), ("streamable", LATEST_HANDSHAKE_VERSION)]


@pytest.fixture(params=CLIENTS, ids=[f"{t}-{v}" for t, v in CLIENTS])
def client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    transport, version = request.param
    # The SDK client always offers its newest version; make it offer this one.
    monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", version)
    return str(transport)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each content test runs on both stores: search is written once per dialect."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'content.db'}"
    else:
        with migrated_schema_sync() as url:
            yield url


def _text(result: types.CallToolResult) -> str:
    # One text item; search results carry resource links beside it.
    (content,) = [c for c in result.content if not isinstance(c, types.ResourceLink)]
    assert isinstance(content, types.TextContent)
    return content.text


async def test_tools_list_and_call_the_built_ins(
    tmp_path: Path, client: str, database_url: str
) -> None:
    async with (
        running(tmp_path, database_url=database_url) as server,
        sdk_session(server, client) as session,
    ):
        with trio.fail_after(REQUEST_S):
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) == {"search_context", "read_context_document"}
            for tool in tools.values():
                assert tool.description is not None
                assert tool.description.startswith("[capability: read]")
                assert tool.annotations is not None
                assert tool.annotations.read_only_hint is True
                assert tool.annotations.destructive_hint is False
                assert tool.input_schema["type"] == "object"

            found = await session.call_tool("search_context", {"query": "refund", "limit": 5})
            assert not found.is_error
            assert "Refund policy" in _text(found)
            assert "agentws://handbook/refunds" in _text(found)
            results = (found.structured_content or {})["results"]
            assert results[0]["uri"] == "agentws://handbook/refunds"
            # The `never` document mentions refunds too, and stays invisible.
            assert all(r["uri"] != "agentws://handbook/salaries" for r in results)
            assert "Salary" not in _text(found)

            read = await session.call_tool(
                "read_context_document", {"uri": "agentws://handbook/refunds"}
            )
            assert not read.is_error
            assert HANDBOOK_DOCS["refunds"][1] in _text(read)
            by_id = await session.call_tool(
                "read_context_document", {"id": results[0]["id"], "offset": 2, "length": 6}
            )
            assert (by_id.structured_content or {})["text"] == "Refund"
            assert "offset=8" in _text(by_id)

            hidden = await session.call_tool(
                "read_context_document", {"uri": "agentws://handbook/salaries"}
            )
            missing = await session.call_tool(
                "read_context_document", {"uri": "agentws://handbook/nothing"}
            )
            assert hidden.is_error
            assert missing.is_error
            assert _text(hidden).replace("salaries", "X") == _text(missing).replace("nothing", "X")


async def test_bad_tool_calls_are_errors_a_client_can_show(
    tmp_path: Path, client: str, database_url: str
) -> None:
    async with (
        running(tmp_path, database_url=database_url) as server,
        sdk_session(server, client) as session,
    ):
        with trio.fail_after(REQUEST_S):
            with pytest.raises(MCPError) as unknown:
                await session.call_tool("drop_database", {})
            assert unknown.value.code == types.INVALID_PARAMS
            assert "drop_database" in unknown.value.message

            for arguments, problem in (
                ({}, '"query" is a required property'),
                ({"query": 42}, '42 is not of type "string"'),
                ({"query": "x", "limit": 1000}, "1000 is greater than the maximum"),
                ({"query": "x", "extra": True}, "Additional properties"),
            ):
                result = await session.call_tool("search_context", arguments)
                assert result.is_error, arguments
                assert problem in _text(result), _text(result)
            both = await session.call_tool("read_context_document", {"uri": "a", "id": "b"})
            assert both.is_error
            # The session is still fine.
            ok = await session.call_tool("search_context", {"query": "onboarding"})
            assert "Onboarding checklist" in _text(ok)


async def test_resources_are_the_exposed_documents(
    tmp_path: Path, client: str, database_url: str
) -> None:
    async with (
        running(tmp_path, database_url=database_url) as server,
        sdk_session(server, client) as session,
    ):
        with trio.fail_after(REQUEST_S):
            listed = {str(r.uri): r for r in (await session.list_resources()).resources}
            assert set(listed) == {"agentws://handbook/refunds", "agentws://handbook/onboarding"}
            refunds = listed["agentws://handbook/refunds"]
            assert refunds.mime_type == "text/markdown"
            assert refunds.title == "Refund policy"
            assert refunds.name == "refunds"

            read = await session.read_resource("agentws://handbook/onboarding")
            (contents,) = read.contents
            assert isinstance(contents, types.TextResourceContents)
            assert contents.text == HANDBOOK_DOCS["onboarding"][1]
            assert contents.mime_type == "text/markdown"

            for uri in (
                "agentws://handbook/salaries",
                "agentws://handbook/nothing",
                "file:///etc/passwd",
            ):
                with pytest.raises(MCPError) as error:
                    await session.read_resource(uri)
                assert error.value.code == -32002
                assert error.value.message == "Resource not found"


async def test_prompts_are_the_skills_with_their_assets(
    tmp_path: Path, client: str, database_url: str
) -> None:
    async with (
        running(tmp_path, database_url=database_url) as server,
        sdk_session(server, client) as session,
    ):
        with trio.fail_after(REQUEST_S):
            (prompt,) = (await session.list_prompts()).prompts
            assert prompt.name == "triage"
            assert prompt.description == "Triage an incoming issue"

            got = await session.get_prompt("triage")
            assert got.description == "Triage an incoming issue"
            first, *assets = got.messages
            assert isinstance(first.content, types.TextContent)
            assert first.content.text.strip() == SKILL_PROMPT
            embedded = {}
            for message in assets:
                assert isinstance(message.content, types.EmbeddedResource)
                resource = message.content.resource
                assert isinstance(resource, types.TextResourceContents)
                embedded[str(resource.uri)] = resource.text
            assert embedded == {
                f"agentws://handbook/skills/triage/{name}": text
                for name, text in SKILL_ASSETS.items()
            }
            with pytest.raises(MCPError) as unknown:
                await session.get_prompt("nope")
            assert "nope" in unknown.value.message


async def test_a_group_without_libraries_or_connectors_offers_nothing(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=False) as server:
        for transport in ("sse", "streamable"):
            async with sdk_session(server, transport) as session:
                with trio.fail_after(REQUEST_S):
                    assert (await session.list_tools()).tools == []
                    assert (await session.list_resources()).resources == []
                    assert (await session.list_prompts()).prompts == []


async def test_connector_tools_come_from_the_cache_with_their_capability(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=False) as server:
        store = server.store
        group = await store.group_by_slug("acme", "ops")
        github = Connector(
            workspace_id=group.workspace_id, name="github", kind=ConnectorKind.GITHUB
        )
        retired = Connector(
            workspace_id=group.workspace_id, name="old", kind=ConnectorKind.GITHUB, active=False
        )
        for connector in (github, retired):
            await store.insert(connector)
            await store.insert(GroupConnector(group_id=group.id, connector_id=connector.id))
        schema = {
            "type": "object",
            "properties": {"repo": {"type": "string"}},
            "required": ["repo"],
        }
        for connector, name, label in (
            (github, "search_issues", Capability.READ),
            (github, "delete_branch", Capability.DESTRUCTIVE),
            (github, "create_issue", None),
            (retired, "anything", Capability.READ),
        ):
            await store.insert(
                CachedTool(
                    connector_id=connector.id,
                    name=name,
                    description=f"{name} on GitHub",
                    input_schema=schema,
                    definition_hash=name,
                    label=label,
                )
            )
        async with sdk_session(server, "streamable") as session:
            with trio.fail_after(REQUEST_S):
                tools = {t.name: t for t in (await session.list_tools()).tools}
                # Where calls can be queued for approval, their outcome can be read.
                assert set(tools) == {
                    "get_approval",
                    "github_create_issue",
                    "github_delete_branch",
                    "github_search_issues",
                }
                # Destructive tools take the confirm token of the 2024-11-05 round trip.
                assert "_confirm_token" in tools["github_delete_branch"].input_schema["properties"]
                assert (
                    "_confirm_token" not in tools["github_create_issue"].input_schema["properties"]
                )
                for name, capability in (
                    ("github_search_issues", "read"),
                    ("github_delete_branch", "destructive"),
                    ("github_create_issue", "write"),  # unlabeled: write, whatever the remote says
                ):
                    tool = tools[name]
                    assert tool.description is not None
                    assert tool.description.startswith(f"[capability: {capability}]")
                    assert tool.annotations is not None
                    assert tool.annotations.read_only_hint is (capability == "read")
                    assert tool.annotations.destructive_hint is (capability == "destructive")
                bad = await session.call_tool("github_search_issues", {"repo": 1})
                assert bad.is_error
                assert 'repo: 1 is not of type "string"' in _text(bad)
                with pytest.raises(MCPError):
                    await session.call_tool("old_anything", {})
