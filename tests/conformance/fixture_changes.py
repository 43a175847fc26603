"""The fixture server's ``server-stateless`` diagnostic tools, and who hears of list changes.

The suite's ``server-stateless`` scenario (SEP-2575, 2026-07-28) calls tools
of fixed names to see what a stateless server does:
``test_logging_tool`` logs (which reach only a request that asked for
them), ``test_missing_capability`` and ``test_streaming_elicitation`` need a client
capability (sampling, elicitation) and refuse a request that did not declare
it with ``MissingRequiredClientCapabilityError`` (-32021); given it, they ask
the client the way its revision does (an ``input_required`` answer on
2026-07-28, a request during the call before). ``test_trigger_tool_change``
and ``test_trigger_prompt_change`` really change the server's lists (they
toggle ``test_dynamic_tool`` and ``test_dynamic_prompt``), and
:class:`ListChanges` announces each change as each revision hears of it:
``notifications/*/list_changed`` on the standalone stream of every
handshake-era session, and on the ``subscriptions/listen`` streams of
2026-07-28 clients (the SDK's :class:`ListenHandler` over its in-memory
bus, which stamps the subscription id and filters by what each stream asked).
:class:`ListChangingServer` declares ``listChanged`` for tools and prompts
to both eras.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import anyio
import attrs
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tests.conformance.fixture_catalog import DYNAMIC_PROMPT

__all__ = [
    "DYNAMIC_PROMPT",
    "DYNAMIC_TOOL",
    "ListChanges",
    "ListChangingServer",
    "diagnostic_tools",
]

Context = ServerRequestContext[Any, Any]
Answer = types.CallToolResult | types.InputRequiredResult
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}
#: The tool ``test_trigger_tool_change`` adds and removes.
DYNAMIC_TOOL = "test_dynamic_tool"
# A fixture serves one test's few sessions: past this many, the oldest is forgotten.
MAX_SESSIONS = 64
_SAMPLING = types.ClientCapabilities(sampling=types.SamplingCapability())
_ELICITATION = types.ClientCapabilities(elicitation=types.ElicitationCapability())


@attrs.define(eq=False)
class ListChanges:
    """The state the trigger tools change, and the clients told of each change.

    One per fixture server. Handshake-era sessions are remembered from their
    ``notifications/initialized`` (the SDK does not say when one ends), the
    latest :data:`MAX_SESSIONS` of them, and forgotten once sending to one fails.
    """

    bus: InMemorySubscriptionBus = attrs.field(factory=InMemorySubscriptionBus)
    listen: ListenHandler = attrs.field(init=False)
    extra_tool: bool = False
    extra_prompt: bool = False
    _sessions: deque[ServerSession] = attrs.field(factory=lambda: deque(maxlen=MAX_SESSIONS))

    def __attrs_post_init__(self) -> None:
        self.listen = ListenHandler(self.bus)

    def offers(self, name: str) -> bool:
        """Whether the tool or prompt ``name`` (its full name, prefix and all) is offered now."""
        if name == DYNAMIC_TOOL:
            return self.extra_tool
        if name == DYNAMIC_PROMPT:
            return self.extra_prompt
        return True

    async def on_initialized(self, ctx: Context, params: types.NotificationParams) -> None:
        """``notifications/initialized``: a handshake-era session to tell of changes."""
        self._sessions.append(ctx.session)

    async def toggle_tool(self) -> None:
        """Add or remove :data:`DYNAMIC_TOOL`, and say the tool list changed."""
        self.extra_tool = not self.extra_tool
        await self._announce(ToolsListChanged(), types.ToolListChangedNotification())

    async def toggle_prompt(self) -> None:
        """Add or remove :data:`DYNAMIC_PROMPT`, and say the prompt list changed."""
        self.extra_prompt = not self.extra_prompt
        await self._announce(PromptsListChanged(), types.PromptListChangedNotification())

    async def _announce(self, event: ServerEvent, notification: types.ServerNotification) -> None:
        await self.bus.publish(event)
        for session in list(self._sessions):
            try:
                # No related request: the session's standalone (GET) stream.
                await session.send_notification(notification)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._sessions.remove(session)


class ListChangingServer(Server[Any]):
    """An SDK server declaring the tool and prompt list changes :class:`ListChanges` announces.

    A 2026-07-28 client learns of them from ``server/discover`` (the SDK
    declares ``listChanged`` there when ``subscriptions/listen`` is served);
    a handshake-era client from ``initialize``, whose options the SDK's HTTP
    transport takes from here.
    """

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(prompts_changed=True, tools_changed=True),
            experimental_capabilities,
            extensions,
        )


def _require(ctx: Context, needed: types.ClientCapabilities) -> None:
    """Refuse a request whose client did not declare ``needed`` (-32021)."""
    if not ctx.session.check_client_capability(needed):
        data = types.MissingRequiredClientCapabilityErrorData(required_capabilities=needed)
        raise MCPError(
            types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            "This tool needs a client capability the request did not declare",
            data.model_dump(by_alias=True, mode="json", exclude_none=True),
        )


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _handshake(ctx: Context) -> bool:
    return ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS


def _reply_text(reply: Any) -> str:
    content = getattr(reply, "content", None)
    return content.text if isinstance(content, types.TextContent) else str(content)


async def _missing_capability(ctx: Context, params: types.CallToolRequestParams) -> Answer:
    _require(ctx, _SAMPLING)
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="Hi"))
    if _handshake(ctx):
        reply = await ctx.session.create_message(
            messages=[message], max_tokens=50, related_request_id=ctx.request_id
        )
        return _text(f"The model said: {_reply_text(reply)}")
    # 2026-07-28: the question goes back as the answer, never as a request on the stream.
    answer = (params.input_responses or {}).get("hello")
    if answer is None:
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(messages=[message], max_tokens=50)
        )
        return types.InputRequiredResult(input_requests={"hello": request})
    return _text(f"The model said: {_reply_text(answer)}")


async def _streaming_elicitation(ctx: Context, params: types.CallToolRequestParams) -> Answer:
    _require(ctx, _ELICITATION)
    message = "What is your name?"
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    if _handshake(ctx):
        reply = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        return _text(f"Hello, {(reply.content or {}).get('name')}!")
    answer = (params.input_responses or {}).get("name")
    if answer is None:
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
        )
        return types.InputRequiredResult(input_requests={"name": request})
    return _text(f"Hello, {(getattr(answer, 'content', None) or {}).get('name')}!")


def diagnostic_tools(
    changes: ListChanges,
) -> dict[str, tuple[str, dict[str, Any], Any]]:
    """The diagnostic tools of one fixture server: name -> (description, schema, handler)."""

    async def trigger_tool(ctx: Context, params: types.CallToolRequestParams) -> Answer:
        await changes.toggle_tool()
        return _text("Added a tool" if changes.extra_tool else "Removed a tool")

    async def trigger_prompt(ctx: Context, params: types.CallToolRequestParams) -> Answer:
        await changes.toggle_prompt()
        return _text("Added a prompt" if changes.extra_prompt else "Removed a prompt")

    async def logging(ctx: Context, params: types.CallToolRequestParams) -> Answer:
        # On 2026-07-28 its logs reach only a request that asked for them. The
        # scenario reads the answer for half a second only: no pauses.
        for message in ("Tool execution started", "Tool execution completed"):
            await ctx.session.send_log_message(
                "info", message, logger="conformance", related_request_id=ctx.request_id
            )
        return _text("Tool with logging executed successfully")

    async def dynamic(ctx: Context, params: types.CallToolRequestParams) -> Answer:
        return _text("This tool comes and goes with test_trigger_tool_change.")

    return {
        "test_missing_capability": (
            "Needs the client's sampling capability (-32021 without it)",
            NO_ARGUMENTS,
            _missing_capability,
        ),
        "test_streaming_elicitation": (
            "Asks the user, as the client's revision allows (needs elicitation)",
            NO_ARGUMENTS,
            _streaming_elicitation,
        ),
        "test_logging_tool": ("Logs two messages at once", NO_ARGUMENTS, logging),
        "test_trigger_tool_change": (
            f"Adds or removes {DYNAMIC_TOOL}",
            NO_ARGUMENTS,
            trigger_tool,
        ),
        "test_trigger_prompt_change": (
            f"Adds or removes the prompt {DYNAMIC_PROMPT}",
            NO_ARGUMENTS,
            trigger_prompt,
        ),
        DYNAMIC_TOOL: (
            "Offered or not, as test_trigger_tool_change toggles it",
            NO_ARGUMENTS,
            dynamic,
        ),
    }
