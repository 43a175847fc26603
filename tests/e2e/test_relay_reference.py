"""The relay with the SDK's own reference server (``everything-server``) as a connector.

Its sampling and elicitation tools ask their client in the middle of the
call, as servers written for the handshake revisions do; on a link of the
stateless revision (2026-07-28) they could not ask at all. agentws's link
to it speaks 2026-07-28, but the calls of a caller who can be asked go
over the connector's handshake link beside it (:mod:`agentws.connectors.links`),
so a caller that declared the capability is asked, whichever revision the
caller speaks: a 2025-11-25 session is asked through its session, a
2026-07-28 client with ``input_required`` rounds. Progress, log messages
and every content type arrive too. An admin who pins the link at 2026-07-28
gets what that revision allows: the remote's own error, never a hang.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import mcp_types as types
import pytest
import trio
from mcp.client.session import ClientRequestContext

from agentws.connectors.admin import attach_connector
from agentws.connectors.remote_mcp import fetch_tools, remote_deadline
from agentws.domain.models import Capability
from agentws.tools.admin import set_label
from agentws.tools.cache_sync import sync_tool_cache
from tests.e2e.mcp_support import Running, modern_client, running, sdk_session
from tests.e2e.reference_servers import everything_server
from tests.e2e.remote_support import (
    LOOPBACK,
    MODERN_LINK,
    SDK_CLIENT_WARNINGS,
    TIMEOUT_S,
    add_remote,
)

pytestmark = pytest.mark.filterwarnings(
    *SDK_CLIENT_WARNINGS,
    # The reference server logs, samples and elicits, which 2026-07-28 deprecates.
    "ignore::mcp.shared.exceptions.MCPDeprecationWarning",
)

ENV = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_TOOL_TIMEOUT_S": "30"}


@pytest.fixture
async def reference_url() -> AsyncIterator[str]:
    async with everything_server() as url:
        yield url


async def _attach(server: Running, url: str, **options: Any) -> None:
    """The reference server as connector ``ref`` of acme/ops, every tool ``read``."""
    connector = await add_remote(server.store, url, name="ref", **options)
    with trio.fail_after(TIMEOUT_S), remote_deadline(connector, TIMEOUT_S):
        tools = await fetch_tools(connector, box=None, allowlist=LOOPBACK)
    await sync_tool_cache(server.store, connector, tools, actor="t")
    await attach_connector(server.store, "acme", "ops", "ref", actor="t")
    for tool in tools:
        await set_label(server.store, "acme", f"ref_{tool.name}", Capability.READ, actor="t")


async def _sample(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="Paris"), model="m"
    )


def _answer(schema: dict[str, Any]) -> dict[str, Any]:
    """A form filled as a person would: each default, else the first choice, else a word."""
    content: dict[str, Any] = {}
    for name, field in schema.get("properties", {}).items():
        if "default" in field:
            content[name] = field["default"]
        elif "enum" in field:
            content[name] = field["enum"][0]
        elif "oneOf" in field:
            content[name] = field["oneOf"][0]["const"]
        elif field.get("type") == "array":
            items = field.get("items", {})
            choices = items.get("enum") or [c["const"] for c in items.get("anyOf", [])]
            content[name] = choices[:1]
        else:
            content[name] = "ada"
    return content


async def _elicit(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    assert isinstance(params, types.ElicitRequestFormParams)
    return types.ElicitResult(action="accept", content=_answer(params.requested_schema))


def _texts(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def _check_calls(call: Any, heard: Heard) -> None:
    """The reference server's relay tools called through ``call(name, arguments)``."""
    sampled = await call("ref_test_sampling", {"prompt": "The capital of France?"})
    assert _texts(sampled) == "LLM response: Paris", sampled
    elicited = await call("ref_test_elicitation", {"message": "Your name?"})
    assert _texts(elicited) == 'User response: action=accept, content={"response":"ada"}'
    defaults = await call("ref_test_elicitation_sep1034_defaults", {})
    assert "action=accept" in _texts(defaults), defaults
    assert '"name":"John Doe"' in _texts(defaults), defaults
    enums = await call("ref_test_elicitation_sep1330_enums", {})
    assert '"untitledSingle":"active"' in _texts(enums), enums
    assert '"titledMulti":["feature"]' in _texts(enums), enums
    await call("ref_test_tool_with_progress", {})
    assert heard.progress == [0, 50, 100]
    await call("ref_test_tool_with_logging", {})
    assert heard.logged == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    image = await call("ref_test_image_content", {})
    assert isinstance(image.content[0], types.ImageContent)
    assert base64.b64decode(image.content[0].data).startswith(b"\x89PNG")
    audio = await call("ref_test_audio_content", {})
    assert isinstance(audio.content[0], types.AudioContent)
    embedded = await call("ref_test_embedded_resource", {})
    assert isinstance(embedded.content[0], types.EmbeddedResource)
    mixed = await call("ref_test_multiple_content_types", {})
    assert [c.type for c in mixed.content] == ["text", "image", "resource"]


@attrs.define
class Heard:
    """What a caller was sent during its calls: log messages and progress."""

    logged: list[str] = attrs.field(factory=list)
    progress: list[float] = attrs.field(factory=list)

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logged.append(str(params.data))

    async def on_progress(self, value: float, total: float | None, message: str | None) -> None:
        self.progress.append(value)


async def test_a_2025_11_25_session_is_asked_by_the_reference_server(
    tmp_path: Path, reference_url: str
) -> None:
    heard = Heard()

    async with running(tmp_path, with_library=False, **ENV) as server:
        await _attach(server, reference_url)
        async with sdk_session(
            server,
            "streamable",
            sampling_callback=_sample,
            elicitation_callback=_elicit,
            logging_callback=heard.on_log,
        ) as session:
            await session.set_logging_level("info")

            async def call(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
                with trio.fail_after(TIMEOUT_S):
                    result = await session.call_tool(
                        name, arguments, progress_callback=heard.on_progress
                    )
                assert not result.is_error, result
                return result

            await _check_calls(call, heard)
        # auto: the link speaks 2026-07-28, as the remote does; this caller, who can be
        # asked, was served over the connector's handshake link beside it.
        [link] = server.runtime.links.states()
        assert link.protocol_version == "2026-07-28"


async def test_a_2026_07_28_client_is_asked_by_the_reference_server(
    tmp_path: Path, reference_url: str
) -> None:
    heard = Heard()

    async with running(tmp_path, with_library=False, **ENV) as server:
        await _attach(server, reference_url)
        async with modern_client(
            server,
            sampling_callback=_sample,
            elicitation_callback=_elicit,
            logging_callback=heard.on_log,
        ) as client:

            async def call(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
                with trio.fail_after(TIMEOUT_S):
                    result = await client.call_tool(
                        name,
                        arguments,
                        progress_callback=heard.on_progress,
                        meta={"io.modelcontextprotocol/logLevel": "info"},
                    )
                assert isinstance(result, types.CallToolResult)
                assert not result.is_error, result
                return result

            await _check_calls(call, heard)


async def test_a_link_pinned_at_2026_07_28_asks_only_as_that_revision_can(
    tmp_path: Path, reference_url: str
) -> None:
    # Pinned, the link speaks the stateless revision: the reference server's
    # tool that asks through a resolver asks with input_required, which
    # reaches the 2025-11-25 caller as a request of its session; its tool
    # that asks mid-call cannot, and says so itself, at once.
    async with running(tmp_path, with_library=False, **ENV) as server:
        await _attach(server, reference_url, protocol=MODERN_LINK)
        async with sdk_session(
            server, "streamable", sampling_callback=_sample, elicitation_callback=_elicit
        ) as session:
            with trio.fail_after(TIMEOUT_S):
                resolved = await session.call_tool("ref_test_streaming_elicitation", {})
                stuck = await session.call_tool("ref_test_sampling", {"prompt": "?"})
            [link] = server.runtime.links.states()
    assert link.protocol_version == MODERN_LINK
    assert _texts(resolved) == "elicitation accept", resolved
    assert _texts(stuck).startswith("Sampling not supported or error: Cannot send"), stuck
