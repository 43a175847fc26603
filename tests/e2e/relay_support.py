"""A remote MCP server that talks back during its calls, for the relay tests.

The SDK's lowlevel ``Server`` (Streamable HTTP) on a real
loopback port. Its tools report progress, log, ask for elicitation and
sampling, return every content type and structured content, and wait to
be cancelled; it records what it saw so tests can check the remote's side.
By default it speaks only the handshake revisions, so that it asks with
requests during the call; over 2026-07-28 (``handshake_only=False``) it
asks with ``input_required`` results instead, under its own keys.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import mcp_types as types
import trio
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.e2e.remote_support import handshake_only
from tests.loopback import serve_loopback

# A 1x1 PNG and an empty WAV, base64.
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
    "AAAABJRU5ErkJggg=="
)
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"total": {"type": "integer"}, "items": {"type": "array"}},
    "required": ["total"],
}
LOG_LEVELS = ("debug", "info", "warning", "error")


TOOLS = [
    types.Tool(
        name="rich",
        title="Rich results",
        description="Structured and every content type",
        input_schema={"type": "object", "properties": {}},
        output_schema=OUTPUT_SCHEMA,
        icons=[types.Icon(src="https://example.invalid/rich.png", mime_type="image/png")],
        annotations=types.ToolAnnotations(
            title="Rich (annotation)",
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=False,
            open_world_hint=False,
        ),
        _meta={"example.com/owner": "team-a"},
    ),
    types.Tool(
        name="bad_output",
        description="Breaks its output schema",
        input_schema={"type": "object", "properties": {}},
        output_schema=OUTPUT_SCHEMA,
    ),
    *(
        types.Tool(name=name, description=name, input_schema={"type": "object", "properties": {}})
        for name in ("failing", "progress", "logs", "ask", "sample", "roots", "slow")
    ),
]


@attrs.define
class Remote:
    """What the remote saw."""

    #: The progress token each ``progress`` call carried.
    progress_tokens: list[Any] = attrs.field(factory=list)
    #: Set when the ``slow`` call started, and when it was cancelled.
    slow_started: trio.Event = attrs.field(factory=trio.Event)
    slow_cancelled: trio.Event = attrs.field(factory=trio.Event)
    #: Set by a test to have the ``slow`` call answer (it waits for it).
    slow_release: trio.Event = attrs.field(factory=trio.Event)
    #: What it lists (tests change it).
    tools: list[types.Tool] = attrs.field(factory=lambda: list(TOOLS))
    #: Whether it speaks only the handshake revisions (else 2026-07-28 too).
    handshake_only: bool = True
    #: Over 2026-07-28: each call's requestState and input responses, and the
    #: client capabilities it declared.
    request_states: list[str | None] = attrs.field(factory=list)
    input_responses: list[dict[str, Any]] = attrs.field(factory=list)
    capabilities: list[types.ClientCapabilities | None] = attrs.field(factory=list)


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _asking(
    state: Remote, ctx: Any, params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    """The asking tools over 2026-07-28: ask with ``input_required``, answer on the retry."""
    state.request_states.append(params.request_state)
    state.input_responses.append(dict(params.input_responses or {}))
    state.capabilities.append(ctx.session.client_capabilities)
    key, question = {
        "ask": (
            "user_name",
            types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message="Your name?",
                    requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
                )
            ),
        ),
        "sample": (
            "greeting",
            types.CreateMessageRequest(
                params=types.CreateMessageRequestParams(
                    messages=[
                        types.SamplingMessage(
                            role="user", content=types.TextContent(type="text", text="Say hi")
                        )
                    ],
                    max_tokens=10,
                )
            ),
        ),
        "roots": ("client_roots", types.ListRootsRequest()),
    }[params.name]
    answer = (params.input_responses or {}).get(key)
    if answer is None:
        return types.InputRequiredResult(
            input_requests={key: question}, request_state=f"remote-state-{params.name}"
        )
    if params.request_state not in (None, f"remote-state-{params.name}"):
        raise MCPError(types.INVALID_PARAMS, "not my state")
    if params.name == "ask":
        return _text(f"{answer.action}: {(answer.content or {}).get('name')}")
    if params.name == "sample":
        return _text(f"sampled by {answer.model}: {answer.content.text}")
    return _text("roots: " + ", ".join(str(root.uri) for root in answer.roots))


def build_remote(state: Remote) -> Server[Any]:
    """The remote's server."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=state.tools)

    async def call_tool(
        ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and params.name in (
            "ask",
            "sample",
            "roots",
        ):
            return _asking(state, ctx, params)
        session = ctx.session
        related = ServerMessageMetadata(related_request_id=ctx.request_id)
        arguments = params.arguments or {}
        if params.name == "rich":
            return types.CallToolResult(
                content=[
                    types.TextContent(type="text", text="two items"),
                    types.ImageContent(type="image", data=PNG, mime_type="image/png"),
                    types.AudioContent(type="audio", data=WAV, mime_type="audio/wav"),
                    types.EmbeddedResource(
                        type="resource",
                        resource=types.TextResourceContents(
                            uri="test://doc", mime_type="text/plain", text="embedded"
                        ),
                    ),
                    types.ResourceLink(
                        type="resource_link", uri="test://linked", name="linked", title="Linked"
                    ),
                ],
                structured_content={"total": 2, "items": ["a", "b"]},
            )
        if params.name == "bad_output":
            return types.CallToolResult(content=[], structured_content={"total": "many"})
        if params.name == "failing":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="it broke")], is_error=True
            )
        if params.name == "progress":
            token = progress_token_from_params(ctx.params)
            state.progress_tokens.append(token)
            if token is not None:
                for step in (1, 2, 3):
                    await session.send_progress_notification(
                        token, step, 3, f"step {step}", related_request_id=ctx.request_id
                    )
            return _text("done")
        if params.name == "logs":
            for level in LOG_LEVELS:
                await session.send_notification(
                    types.LoggingMessageNotification(
                        params=types.LoggingMessageNotificationParams(
                            level=level, logger="remote", data=f"{level} from the remote"
                        )
                    ),
                    related_request_id=ctx.request_id,
                )
            return _text("logged")
        if params.name == "ask":
            try:
                answer = await session.send_request(
                    types.ElicitRequest(
                        params=types.ElicitRequestFormParams(
                            message=f"Your name? ({arguments.get('who', '')})",
                            requested_schema={
                                "type": "object",
                                "properties": {"name": {"type": "string"}},
                            },
                        )
                    ),
                    types.ElicitResult,
                    metadata=related,
                )
            except MCPError as exc:
                return _text(f"elicitation refused: {exc.error.code} {exc.error.message}")
            return _text(f"{answer.action}: {(answer.content or {}).get('name')}")
        if params.name == "sample":
            try:
                sampled = await session.send_request(
                    types.CreateMessageRequest(
                        params=types.CreateMessageRequestParams(
                            messages=[
                                types.SamplingMessage(
                                    role="user",
                                    content=types.TextContent(type="text", text="Say hi"),
                                )
                            ],
                            max_tokens=10,
                        )
                    ),
                    types.CreateMessageResult,
                    metadata=related,
                )
            except MCPError as exc:
                return _text(f"sampling refused: {exc.error.code} {exc.error.message}")
            return _text(f"sampled by {sampled.model}: {sampled.content.text}")  # type: ignore[union-attr]
        if params.name == "roots":
            try:
                listed = await session.send_request(
                    types.ListRootsRequest(), types.ListRootsResult, metadata=related
                )
            except MCPError as exc:
                return _text(f"roots refused: {exc.error.code} {exc.error.message}")
            return _text("roots: " + ", ".join(str(root.uri) for root in listed.roots))
        if params.name == "slow":
            state.slow_started.set()
            try:
                await state.slow_release.wait()
            except trio.Cancelled:
                state.slow_cancelled.set()
                raise
            return _text("slow, done")
        raise MCPError(types.INVALID_PARAMS, f"no tool {params.name}")

    return Server("relay-remote", on_list_tools=list_tools, on_call_tool=call_tool)


@asynccontextmanager
async def remote_server(state: Remote) -> AsyncIterator[str]:
    """Serve the remote at ``http://127.0.0.1:<port>/mcp`` until the block ends."""
    async with serve_remote(build_remote(state), handshake=state.handshake_only) as url:
        yield url


@asynccontextmanager
async def serve_remote(server: Server[Any], *, handshake: bool = False) -> AsyncIterator[str]:
    """Serve ``server`` at ``http://127.0.0.1:<port>/mcp`` until the block ends.

    ``handshake``: it refuses requests of 2026-07-28, as a server of the
    handshake revisions alone does.
    """
    app = server.streamable_http_app(streamable_http_path="/mcp")
    if handshake:
        app = handshake_only(app)
    async with serve_loopback(app) as base:
        yield f"{base}/mcp"
