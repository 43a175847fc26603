"""The relay of a remote MCP connector loses nothing (session eras).

A real remote (:mod:`tests.e2e.relay_support`) attached to a running
agentws; SDK clients call its tools through agentws and get what the remote
sent: the tool's whole definition, every content type and structured
content, progress under their own token, log messages at their level,
elicitation and sampling requests (or the remote a clear error), and the
remote hears a cancellation.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import trio
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning

from agentws.domain.models import Capability, Connector
from tests.e2e.mcp_support import Running, running, sdk_session
from tests.e2e.relay_support import OUTPUT_SCHEMA, PNG, TOOLS, WAV, Remote, remote_server
from tests.e2e.remote_support import MODERN_LINK, SDK_CLIENT_WARNINGS, TIMEOUT_S, attach_remote

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

ENV = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_TOOL_TIMEOUT_S": "10"}


@asynccontextmanager
async def relayed(tmp_path: Path, state: Remote) -> AsyncIterator[Running]:
    """agentws with the remote attached to acme/ops as ``third``, every tool labelled read."""
    async with running(tmp_path, with_library=False, **ENV) as server, remote_server(state) as url:
        labels = {f"third_{tool.name}": Capability.READ for tool in TOOLS}
        # A remote that speaks 2026-07-28 too is linked at that revision here.
        protocol = "auto" if state.handshake_only else MODERN_LINK
        await attach_remote(server.store, url, labels, protocol=protocol)
        yield server


def _text(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


async def test_a_connector_tool_keeps_its_definition_and_its_results(tmp_path: Path) -> None:
    async with relayed(tmp_path, Remote()) as server, sdk_session(server, "streamable") as session:
        with trio.fail_after(TIMEOUT_S):
            listed = {t.name: t for t in (await session.list_tools()).tools}
            rich = listed["third_rich"]
            assert rich.title == "Rich results"
            assert rich.output_schema == OUTPUT_SCHEMA
            assert [icon.src for icon in rich.icons or []] == ["https://example.invalid/rich.png"]
            assert rich.meta == {"example.com/owner": "team-a"}
            # agentws's label (read) decides these two; the remote's other hints stay.
            assert rich.annotations is not None
            assert rich.annotations.read_only_hint is True
            assert rich.annotations.destructive_hint is False
            assert rich.annotations.idempotent_hint is False
            assert rich.annotations.open_world_hint is False
            assert rich.annotations.title == "Rich results"

            result = await session.call_tool("third_rich", {})
            assert not result.is_error
            assert result.structured_content == {"total": 2, "items": ["a", "b"]}
            assert [c.type for c in result.content] == [
                "text",
                "image",
                "audio",
                "resource",
                "resource_link",
            ]
            _, image, audio, resource, link = result.content
            assert isinstance(image, types.ImageContent) and image.data == PNG
            assert isinstance(audio, types.AudioContent) and audio.data == WAV
            assert isinstance(resource, types.EmbeddedResource)
            assert isinstance(resource.resource, types.TextResourceContents)
            assert resource.resource.text == "embedded"
            assert isinstance(link, types.ResourceLink)
            assert (str(link.uri), link.title) == ("test://linked", "Linked")

            failing = await session.call_tool("third_failing", {})
            assert failing.is_error
            assert _text(failing) == "it broke"

            # Structured content that breaks the remote's own schema is a tool error.
            bad = await session.call_tool("third_bad_output", {})
            assert bad.is_error
            assert _text(bad).startswith(
                "third answered what cannot be passed on: "
                "Invalid structured content returned by tool bad_output: "
            ), _text(bad)


async def test_a_new_title_or_output_schema_keeps_the_label(tmp_path: Path) -> None:
    state = Remote()
    async with relayed(tmp_path, state) as server, sdk_session(server, "streamable") as session:
        connector = await server.store.find(Connector, name="third")
        assert connector is not None
        schema = {"type": "object", "properties": {"total": {"type": "number"}}}
        state.tools[0] = state.tools[0].model_copy(
            update={"title": "Richer", "output_schema": schema}
        )
        with trio.fail_after(TIMEOUT_S):
            report = await server.runtime.links.refresh(connector)
            listed = {t.name: t for t in (await session.list_tools()).tools}
    # Name, description and input schema stand: not a changed definition.
    assert report.changed == ()
    rich = listed["third_rich"]
    assert (rich.title, rich.output_schema) == ("Richer", schema)
    assert (rich.description or "").startswith("[capability: read] ")


async def test_progress_reaches_the_client_under_its_own_token(tmp_path: Path) -> None:
    state = Remote()
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with relayed(tmp_path, state) as server, sdk_session(server, "streamable") as session:
        with trio.fail_after(TIMEOUT_S):
            result = await session.call_tool("third_progress", {}, progress_callback=on_progress)
            assert _text(result) == "done"
            # Without a token of the client's, the remote is asked for no progress.
            assert _text(await session.call_tool("third_progress", {})) == "done"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert state.progress_tokens[0] is not None
    assert state.progress_tokens[1] is None


async def test_log_messages_reach_the_client_at_the_level_it_set(tmp_path: Path) -> None:
    heard: list[tuple[str, str | None, Any]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        heard.append((params.level, params.logger, params.data))

    async with (
        relayed(tmp_path, Remote()) as server,
        sdk_session(server, "streamable", logging_callback=on_log) as session,
    ):
        with trio.fail_after(TIMEOUT_S):
            assert _text(await session.call_tool("third_logs", {})) == "logged"
            everything = list(heard)
            heard.clear()
            with warnings.catch_warnings():
                # Deprecated from 2026-07-28; this session speaks an older version.
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await session.set_logging_level("warning")
            assert _text(await session.call_tool("third_logs", {})) == "logged"
    assert [level for level, _, _ in everything] == ["debug", "info", "warning", "error"]
    assert heard == [
        ("warning", "remote", "warning from the remote"),
        ("error", "remote", "error from the remote"),
    ]


def _answering(name: str) -> Any:
    async def elicit(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        await trio.sleep(0.05)  # the other client's request is in flight meanwhile
        return types.ElicitResult(action="accept", content={"name": name})

    return elicit


async def _sample(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="hi"), model="test-model"
    )


async def test_elicitation_and_sampling_reach_the_client_whose_call_it_is(tmp_path: Path) -> None:
    answers: dict[str, str] = {}
    async with relayed(tmp_path, Remote()) as server:

        async def call_as(name: str) -> None:
            async with sdk_session(
                server, "streamable", elicitation_callback=_answering(name)
            ) as session:
                answers[name] = _text(await session.call_tool("third_ask", {}))

        with trio.fail_after(TIMEOUT_S):
            # Two callers share the link: each is asked for its own call.
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call_as, "ada")
                nursery.start_soon(call_as, "bob")
            async with sdk_session(server, "streamable", sampling_callback=_sample) as session:
                sampled = _text(await session.call_tool("third_sample", {}))
    assert answers == {"ada": "accept: ada", "bob": "accept: bob"}
    assert sampled == "sampled by test-model: hi"


async def test_a_remote_asks_the_calling_client_for_its_roots(tmp_path: Path) -> None:
    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/repo", name="repo")])

    async with relayed(tmp_path, Remote()) as server:
        async with sdk_session(server, "streamable", list_roots_callback=roots) as session:
            with trio.fail_after(TIMEOUT_S):
                listed = _text(await session.call_tool("third_roots", {}))
        async with sdk_session(server, "streamable") as session:
            with trio.fail_after(TIMEOUT_S):
                refused = _text(await session.call_tool("third_roots", {}))
    assert listed == "roots: file:///work/repo"
    assert "the calling client does not support roots" in refused


async def test_the_remote_hears_a_clear_error_when_the_client_cannot_answer(
    tmp_path: Path,
) -> None:
    async with relayed(tmp_path, Remote()) as server, sdk_session(server, "streamable") as session:
        with trio.fail_after(TIMEOUT_S):
            asked = _text(await session.call_tool("third_ask", {}))
            sampled = _text(await session.call_tool("third_sample", {}))
    assert asked.startswith("elicitation refused: ")
    assert "the calling client does not support elicitation" in asked
    assert "the calling client does not support sampling" in sampled


@pytest.mark.parametrize(
    ("transport", "link"),
    [("streamable", "handshake"), ("sse", "handshake"), ("streamable", "2026-07-28")],
)
async def test_a_cancelled_call_is_cancelled_at_the_remote(
    tmp_path: Path, transport: str, link: str
) -> None:
    # Over a handshake link the link sends notifications/cancelled; over a
    # 2026-07-28 one it closes the call's request. Either way the remote stops.
    state = Remote(handshake_only=link == "handshake")
    async with relayed(tmp_path, state) as server, sdk_session(server, transport) as session:
        with trio.fail_after(TIMEOUT_S):
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    await session.call_tool("third_slow", {})

                nursery.start_soon(call)
                await state.slow_started.wait()
                # The SDK client sends notifications/cancelled for a request it abandons.
                nursery.cancel_scope.cancel()
            await state.slow_cancelled.wait()
            # The link is still good for the next call.
            assert _text(await session.call_tool("third_progress", {})) == "done"
