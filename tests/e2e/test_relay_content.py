"""A remote MCP connector's resources, templates and prompts reach its group's clients.

A real remote (:mod:`tests.e2e.content_remote_support`) attached to acme/ops
as connector ``notes`` of a running agentws; SDK clients of every era list
and read its resources under the remote's own URIs beside the group's
documents, get its prompts as ``notes_<prompt>``, complete their arguments,
answer what the remote asks during ``prompts/get``, and hear when the
remote's lists change. Over a link of either era: the remote speaks
2026-07-28 (as SDK servers do), or the handshake revisions alone
(``handshake_only``). A 2026-07-28 client over a 2026-07-28 link gets the
remote's own questions, under its keys, with a state sealed for it.
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import trio
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from agentws.connectors.admin import attach_connector
from tests.e2e.content_remote_support import BLOB, ITEM_TEMPLATE, ContentRemote, content_server
from tests.e2e.mcp_support import Running, modern_client, running, sdk_session
from tests.e2e.notifications_support import Heard, change_until_heard
from tests.e2e.remote_support import MODERN_LINK, SDK_CLIENT_WARNINGS, TIMEOUT_S, add_remote

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

ENV = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_TOOL_TIMEOUT_S": "10"}


LINKS = ["modern", "handshake"]


def remote_for(link: str) -> ContentRemote:
    return ContentRemote(handshake_only=link == "handshake")


@asynccontextmanager
async def with_notes(tmp_path: Path, state: ContentRemote) -> AsyncIterator[Running]:
    """agentws with the remote attached to acme/ops as ``notes`` (the remote outlives it)."""
    async with content_server(state) as url, running(tmp_path, **ENV) as server:
        # A remote of both eras (as SDK servers are) is linked at 2026-07-28 here.
        protocol = "auto" if state.handshake_only else MODERN_LINK
        await add_remote(server.store, url, name="notes", protocol=protocol)
        await attach_connector(server.store, "acme", "ops", "notes", actor="t")
        yield server


def _text(content: Any) -> str:
    assert isinstance(content, types.TextContent)
    return content.text


@pytest.mark.parametrize("transport", ["sse", "streamable"])
async def test_a_remotes_resources_and_prompts_are_its_groups(
    tmp_path: Path, transport: str
) -> None:
    state = ContentRemote()
    async with with_notes(tmp_path, state) as server, sdk_session(server, transport) as session:
        with trio.fail_after(TIMEOUT_S):
            listed = {str(r.uri): r for r in (await session.list_resources()).resources}
            # The group's own documents, then the remote's resources under its URIs.
            assert any(uri.startswith("agentws://handbook/") for uri in listed)
            assert listed["note://hello"].title == "Hello"
            assert "note://logo" in listed
            assert all(r.name != "imposter" for r in listed.values())

            hello = (await session.read_resource("note://hello")).contents
            assert isinstance(hello[0], types.TextResourceContents)
            assert hello[0].text == "Hello, world."
            logo = (await session.read_resource("note://logo")).contents
            assert isinstance(logo[0], types.BlobResourceContents)
            assert logo[0].blob == BLOB

            templates = [
                t.uri_template for t in (await session.list_resource_templates()).resource_templates
            ]
            assert ITEM_TEMPLATE in templates
            assert any(t.startswith("agentws://") for t in templates)
            item = (await session.read_resource("note://items/7")).contents
            assert isinstance(item[0], types.TextResourceContents)
            assert item[0].text == "item 7"
            assert state.reads == ["note://hello", "note://logo", "note://items/7"]

            with pytest.raises(MCPError) as missing:
                await session.read_resource("note://missing")
            assert missing.value.error.code == -32002
            assert state.reads[-1] == "note://items/7"  # not the remote's: never asked

            prompts = {p.name: p for p in (await session.list_prompts()).prompts}
            greet = prompts["notes_greet"]
            assert greet.title == "Greeting"
            assert [(a.name, a.required) for a in greet.arguments or []] == [
                ("who", True),
                ("colour", False),
            ]
            got = await session.get_prompt("notes_greet", {"who": "Ada", "colour": "red"})
            assert _text(got.messages[0].content) == "Greet Ada in red."
            embedded = got.messages[1].content
            assert isinstance(embedded, types.EmbeddedResource)
            assert str(embedded.resource.uri) == "note://hello"

            colours = await session.complete(
                types.PromptReference(type="ref/prompt", name="notes_greet"),
                {"name": "colour", "value": "r"},
            )
            assert colours.completion.values == ["red"]
            items = await session.complete(
                types.ResourceTemplateReference(type="ref/resource", uri=ITEM_TEMPLATE),
                {"name": "id", "value": "4"},
            )
            assert items.completion.values == ["42"]


@pytest.mark.parametrize("link", LINKS)
async def test_a_remote_prompt_asks_the_client_with_a_session(tmp_path: Path, link: str) -> None:
    asked: list[str] = []

    async def answer(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"topic": "trio"})

    async with (
        with_notes(tmp_path, remote_for(link)) as server,
        sdk_session(server, "streamable", elicitation_callback=answer) as session,
    ):
        with trio.fail_after(TIMEOUT_S):
            got = await session.get_prompt("notes_ask")
    assert asked == ["Connector 'notes' asks: Which topic?"]
    assert _text(got.messages[0].content) == "About trio."


async def test_a_2026_07_28_client_lists_reads_and_gets_them_too(tmp_path: Path) -> None:
    async with with_notes(tmp_path, ContentRemote()) as server, modern_client(server) as client:
        with trio.fail_after(TIMEOUT_S):
            uris = {str(r.uri) for r in (await client.list_resources()).resources}
            assert {"note://hello", "note://logo"} <= uris
            read = (await client.read_resource("note://items/42")).contents
            assert isinstance(read[0], types.TextResourceContents)
            assert read[0].text == "item 42"
            names = {p.name for p in (await client.list_prompts()).prompts}
            assert {"notes_greet", "notes_ask"} <= names
            got = await client.get_prompt("notes_greet", {"who": "Grace"})
            assert _text(got.messages[0].content) == "Greet Grace in grey."


@pytest.mark.parametrize("link", LINKS)
async def test_sessions_hear_when_a_remotes_lists_change(tmp_path: Path, link: str) -> None:
    state, heard = remote_for(link), Heard()
    n = itertools.count()
    async with (
        with_notes(tmp_path, state) as server,
        sdk_session(server, "streamable", message_handler=heard.handle) as session,
    ):
        with trio.fail_after(TIMEOUT_S):
            await session.list_prompts()

        async def add_prompt() -> None:
            state.prompts.append(types.Prompt(name=f"new{next(n)}"))
            await state.announce("prompts")

        await change_until_heard(
            heard, add_prompt, lambda: "notifications/prompts/list_changed" in heard.methods()
        )
        with trio.fail_after(TIMEOUT_S):
            names = {p.name for p in (await session.list_prompts()).prompts}
        assert "notes_new0" in names

        async def add_resource() -> None:
            i = next(n)
            state.resources.append(types.Resource(uri=f"note://new{i}", name=f"new{i}"))
            await state.announce("resources")

        await change_until_heard(
            heard, add_resource, lambda: "notifications/resources/list_changed" in heard.methods()
        )
        with trio.fail_after(TIMEOUT_S):
            uris = {str(r.uri) for r in (await session.list_resources()).resources}
        assert any(uri.startswith("note://new") for uri in uris)


async def test_a_2026_07_28_client_gets_the_remotes_own_questions(tmp_path: Path) -> None:
    async def unused(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        raise AssertionError("the rounds are driven by hand here")

    async with (
        with_notes(tmp_path, ContentRemote()) as server,
        # The callback declares the elicitation capability.
        modern_client(server, elicitation_callback=unused) as client,
    ):
        session = client.session
        with trio.fail_after(TIMEOUT_S):
            asked = await session.get_prompt("notes_ask", allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult)
            # The remote's question under its own key; the state is agentws's, sealed.
            assert list(asked.input_requests or {}) == ["topic"]
            state = asked.request_state
            assert state is not None and "remote-state-1" not in state
            answer = {"topic": types.ElicitResult(action="accept", content={"topic": "trio"})}
            got = await session.get_prompt("notes_ask", input_responses=answer, request_state=state)
            assert isinstance(got, types.GetPromptResult)
            assert _text(got.messages[0].content) == "About trio."

            with pytest.raises(MCPError) as tampered:
                await session.get_prompt(
                    "notes_ask", input_responses=answer, request_state=state[:-4] + "AAAA"
                )
            assert tampered.value.error.code == types.INVALID_PARAMS
            with pytest.raises(MCPError) as elsewhere:
                await session.get_prompt(
                    "notes_greet", {"who": "x"}, input_responses=answer, request_state=state
                )
            assert elsewhere.value.error.code == types.INVALID_PARAMS
            assert "another call" in elsewhere.value.error.message


async def test_a_2026_07_28_client_answers_only_what_it_declared(tmp_path: Path) -> None:
    async def answer(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"topic": "nurseries"})

    async with with_notes(tmp_path, ContentRemote()) as server:
        async with modern_client(server, elicitation_callback=answer) as client:
            with trio.fail_after(TIMEOUT_S):
                # The SDK's client drives the rounds with its callback.
                got = await client.get_prompt("notes_ask")
            assert _text(got.messages[0].content) == "About nurseries."
        async with modern_client(server) as client:
            with trio.fail_after(TIMEOUT_S), pytest.raises(MCPError) as refused:
                await client.session.get_prompt("notes_ask", allow_input_required=True)
        assert refused.value.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_remote_that_is_down_leaves_the_rest_listed(tmp_path: Path) -> None:
    async with running(tmp_path, **ENV) as server:
        await add_remote(server.store, f"http://127.0.0.1:{_closed_port()}/mcp", name="notes")
        await attach_connector(server.store, "acme", "ops", "notes", actor="t")
        async with sdk_session(server, "streamable") as session:
            with trio.fail_after(TIMEOUT_S):
                uris = [str(r.uri) for r in (await session.list_resources()).resources]
                prompts = (await session.list_prompts()).prompts
                with pytest.raises(MCPError) as unknown:
                    await session.get_prompt("notes_greet")
    assert uris and all(uri.startswith("agentws://") for uri in uris)
    assert all(not p.name.startswith("notes_") for p in prompts)
    assert unknown.value.error.code == types.INVALID_PARAMS
