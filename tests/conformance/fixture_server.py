"""The server the MCP conformance suite's server scenarios call, over Streamable HTTP.

The suite (``@modelcontextprotocol/conformance``) tests a server by calling
tools of fixed names and checking what comes back: every content type, an
error result, log and progress notifications during a call, and sampling and
elicitation requests to the client, and on 2026-07-28 answers that ask the
client first (:mod:`tests.conformance.fixture_mrtr`). It also reads resources
and a resource template and gets prompts of fixed names
(:mod:`tests.conformance.fixture_catalog`), and ``server-stateless`` calls
diagnostic tools that need client capabilities or change the tool and prompt
lists (:mod:`tests.conformance.fixture_changes`). This module is such a
server, written on the ``mcp`` SDK's lowlevel :class:`Server`, following the
suite's own "Server Implementation Requirements" for each scenario. It
serves both eras: handshake sessions and 2026-07-28 stateless requests; its
sampling and elicitation tools ask a client of 2026-07-28 (agentws's link,
which speaks it) with an ``input_required`` answer, as that revision has no
requests from the server.

Run alone against the suite, it must pass those scenarios. Attached to
agentws as a remote MCP connector, it shows what the relay keeps. agentws
offers a connector's tools and prompts as ``<connector>_<name>``, so
:func:`open_fixture_server` can serve only the tools and prompts whose names
start with a prefix, with that prefix dropped: connector ``test`` serving
``simple_text`` offers ``test_simple_text``, the name the suite calls.
Resource URIs are never prefixed; ``resources=False`` leaves them out, so
that only one of several connectors serves them.

``python -m tests.conformance.fixture_server [PORT]`` serves all of them at
``http://127.0.0.1:PORT/mcp``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import mcp_types as types
import trio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

from tests.conformance.fixture_catalog import (
    PNG,
    PROMPTS,
    WAV,
    list_resource_templates,
    list_resources,
    read_resource,
)
from tests.conformance.fixture_changes import ListChanges, ListChangingServer, diagnostic_tools
from tests.conformance.fixture_mrtr import MRTR_TOOLS, Ask, AskingHandler, asking
from tests.loopback import serve_loopback

__all__ = ["TOOL_NAMES", "open_fixture_server"]

# The suite asks for a delay of about 50 ms between notifications, so that a
# client sees them arrive one by one during the call.
STEP_S = 0.05
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}
JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"
Context = ServerRequestContext[Any, Any]
Answer = types.CallToolResult | types.InputRequiredResult
#: A tool of the 2025 revisions: what it answers depends on its arguments alone.
PlainHandler = Callable[[Context, dict[str, Any]], Awaitable[types.CallToolResult]]


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def _simple_text(ctx: Context, args: dict[str, Any]) -> types.CallToolResult:
    return _text("This is a simple text response for testing.")


async def _image(ctx: Context, args: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.ImageContent(type="image", data=PNG, mime_type="image/png")]
    )


async def _audio(ctx: Context, args: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]
    )


def _resource(uri: str, mime_type: str, text: str) -> types.EmbeddedResource:
    return types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(uri=uri, mime_type=mime_type, text=text),
    )


async def _embedded(ctx: Context, args: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            _resource(
                "test://embedded-resource", "text/plain", "This is an embedded resource content."
            )
        ]
    )


async def _mixed(ctx: Context, args: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text="Multiple content types test:"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            _resource(
                "test://mixed-content-resource", "application/json", '{"test":"data","value":123}'
            ),
        ]
    )


async def _logging(ctx: Context, args: dict[str, Any]) -> types.CallToolResult:
    for i, message in enumerate(
        ("Tool execution started", "Tool processing data", "Tool execution completed")
    ):
        if i:
            await trio.sleep(STEP_S)
        await ctx.session.send_log_message(
            "info", message, logger="conformance", related_request_id=ctx.request_id
        )
    return _text("Tool with logging executed successfully")


async def _progress(ctx: Context, args: dict[str, Any]) -> types.CallToolResult:
    token = ctx.meta.get("progress_token") if ctx.meta else None
    for i, progress in enumerate((0, 50, 100)):
        if i:
            await trio.sleep(STEP_S)
        if token is not None:
            await ctx.session.send_progress_notification(
                token, progress, 100, related_request_id=str(ctx.request_id)
            )
    return _text("Tool with progress executed successfully")


# How long test_reconnection takes: longer than the stream agentws keeps
# open for it in the SSE polling scenario.
RECONNECTION_S = 1.5


async def _reconnection(ctx: Context, args: dict[str, Any]) -> types.CallToolResult:
    await anyio.sleep(RECONNECTION_S)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text="Reconnection test completed")]
    )


#: SEP-2243: the region is sent in a header too (``Mcp-Param-Region``), which
#: the server checks against the argument.
_CUSTOM_HEADERS: dict[str, Any] = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    "required": ["region"],
}


async def _custom_headers(ctx: Context, args: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"region: {args.get('region')}")]
    )


async def _error(ctx: Context, args: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.TextContent(
                type="text", text="This tool intentionally returns an error for testing"
            )
        ],
        is_error=True,
    )


async def _sampling(ask: Ask, args: dict[str, Any]) -> types.CallToolResult:
    message = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=str(args["prompt"]))
    )
    result = await ask(
        types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(messages=[message], max_tokens=100)
        )
    )
    content = result.content
    text = content.text if isinstance(content, types.TextContent) else str(content)
    return _text(f"LLM response: {text}")


async def _elicit(
    ask: Ask, message: str, schema: dict[str, Any], reply: str
) -> types.CallToolResult:
    result = await ask(
        types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
        )
    )
    return _text(reply.format(action=result.action, content=result.content))


async def _elicitation(ask: Ask, args: dict[str, Any]) -> types.CallToolResult:
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    return await _elicit(
        ask, str(args["message"]), schema, "User response: action={action}, content={content}"
    )


async def _sep1034_defaults(ask: Ask, args: dict[str, Any]) -> types.CallToolResult:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {
                "type": "string",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "default": True},
        },
    }
    return await _elicit(
        ask,
        "Please review and update the form fields with defaults",
        schema,
        "Elicitation completed: action={action}, content={content}",
    )


def _titled(prefix: str, titles: tuple[str, ...]) -> list[dict[str, str]]:
    return [{"const": f"{prefix}{i}", "title": t} for i, t in enumerate(titles, start=1)]


async def _sep1330_enums(ask: Ask, args: dict[str, Any]) -> types.CallToolResult:
    options = ["option1", "option2", "option3"]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": options},
            "titledSingle": {
                "type": "string",
                "oneOf": _titled("value", ("First Option", "Second Option", "Third Option")),
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": _titled("value", ("First Choice", "Second Choice", "Third Choice"))
                },
            },
        },
    }
    return await _elicit(
        ask,
        "Please select options from the enum fields",
        schema,
        "Elicitation completed: action={action}, content={content}",
    )


async def _json_schema(ctx: Context, args: dict[str, Any]) -> types.CallToolResult:
    return _text(f"Received: {sorted(args)}")


def _arguments(**properties: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            name: {"type": "string", "description": d} for name, d in properties.items()
        },
        "required": list(properties),
    }


# What the json-schema-2020-12 scenario expects in the listing, keyword for keyword.
_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": JSON_SCHEMA_2020_12,
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def _plain(
    handler: PlainHandler,
) -> Callable[[Context, types.CallToolRequestParams], Awaitable[Answer]]:
    """A handler of the arguments alone, as one of the whole request."""

    async def call(ctx: Context, params: types.CallToolRequestParams) -> Answer:
        return await handler(ctx, dict(params.arguments or {}))

    return call


# name -> (description, input schema, handler of the arguments)
_PLAIN_TOOLS: dict[str, tuple[str, dict[str, Any], PlainHandler]] = {
    "test_simple_text": ("Returns simple text", NO_ARGUMENTS, _simple_text),
    "test_image_content": ("Returns an image", NO_ARGUMENTS, _image),
    "test_audio_content": ("Returns audio", NO_ARGUMENTS, _audio),
    "test_embedded_resource": ("Returns an embedded resource", NO_ARGUMENTS, _embedded),
    "test_multiple_content_types": ("Returns text, image and resource", NO_ARGUMENTS, _mixed),
    "test_tool_with_logging": ("Logs three messages while it runs", NO_ARGUMENTS, _logging),
    "test_tool_with_progress": ("Reports progress while it runs", NO_ARGUMENTS, _progress),
    "test_error_handling": ("Always returns an error", NO_ARGUMENTS, _error),
    "test_reconnection": (
        "Answers after a while, so that the server may close its stream first (SSE polling)",
        NO_ARGUMENTS,
        _reconnection,
    ),
    "test_custom_headers": (
        "Takes a region that clients also send as the Mcp-Param-Region header",
        _CUSTOM_HEADERS,
        _custom_headers,
    ),
    "json_schema_2020_12_tool": (
        "Tool with JSON Schema 2020-12 features",
        _SCHEMA_2020_12,
        _json_schema,
    ),
}
# name -> (description, input schema, handler of the arguments and the answers)
_ASKING_TOOLS: dict[str, tuple[str, dict[str, Any], AskingHandler]] = {
    "test_sampling": (
        "Asks the client's model",
        _arguments(prompt="The prompt to send to the LLM"),
        _sampling,
    ),
    "test_elicitation": (
        "Asks the user",
        _arguments(message="The message to show the user"),
        _elicitation,
    ),
    "test_elicitation_sep1034_defaults": (
        "Asks the user, with defaults",
        NO_ARGUMENTS,
        _sep1034_defaults,
    ),
    "test_elicitation_sep1330_enums": (
        "Asks the user to pick from enums",
        NO_ARGUMENTS,
        _sep1330_enums,
    ),
}
#: A tool's or a prompt's entry in its table.
_Spec = TypeVar("_Spec")
_TOOLS: dict[str, tuple[str, dict[str, Any], Callable[[Context, Any], Awaitable[Answer]]]] = {
    **{
        name: (about, schema, _plain(handler))
        for name, (about, schema, handler) in _PLAIN_TOOLS.items()
    },
    **{
        name: (about, schema, asking(handler))
        for name, (about, schema, handler) in _ASKING_TOOLS.items()
    },
    **MRTR_TOOLS,
}
#: The names the suite calls (besides the diagnostic tools of :mod:`.fixture_changes`).
TOOL_NAMES = tuple(_TOOLS)


def fixture_server(prefix: str = "", *, resources: bool = True) -> Server[Any]:
    """The SDK server offering the tools and prompts named ``prefix…``, ``prefix`` dropped.

    Args:
        prefix: Only the tools and prompts whose names start with it are
            offered, under their names without it.
        resources: Whether to serve the resources and the resource template
            (their URIs are never prefixed).
    """
    changes = ListChanges()
    every_tool = {**_TOOLS, **diagnostic_tools(changes)}

    def offered(table: dict[str, _Spec]) -> dict[str, _Spec]:
        # Looked up at each request: the trigger tools change what is offered.
        return {
            name.removeprefix(prefix): spec
            for name, spec in table.items()
            if name.startswith(prefix) and changes.offers(name)
        }

    async def list_tools(ctx: Context, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=description, input_schema=schema)
                for name, (description, schema, _) in offered(every_tool).items()
            ]
        )

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> Answer:
        tools = offered(every_tool)
        if params.name not in tools:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"unknown tool {params.name}")],
                is_error=True,
            )
        handler: Callable[[Context, Any], Awaitable[Answer]] = tools[params.name][2]
        return await handler(ctx, params)

    async def list_prompts(ctx: Context, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(name=name, description=description, arguments=arguments or None)
                for name, (description, arguments, _) in offered(PROMPTS).items()
            ]
        )

    async def get_prompt(
        ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        prompts = offered(PROMPTS)
        if params.name not in prompts:
            raise MCPError(types.INVALID_PARAMS, f"unknown prompt {params.name}")
        return await prompts[params.name][2](ctx, params)

    async def set_level(ctx: Context, params: types.SetLevelRequestParams) -> types.EmptyResult:
        return types.EmptyResult()

    server = ListChangingServer(
        "agentws-conformance-fixture",
        # server-stateless wants a name and a version in the discover result's serverInfo.
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources if resources else None,
        on_list_resource_templates=list_resource_templates if resources else None,
        on_read_resource=read_resource if resources else None,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_subscriptions_listen=changes.listen,
        on_set_logging_level=set_level,
    )
    # A handshake-era session is one to tell of list changes.
    server.add_notification_handler(
        "notifications/initialized", types.NotificationParams, changes.on_initialized
    )
    return server


@asynccontextmanager
async def open_fixture_server(
    prefix: str = "", port: int = 0, *, resources: bool = True
) -> AsyncIterator[str]:
    """Serve :func:`fixture_server` on loopback until the block ends; yield its MCP URL."""
    app = fixture_server(prefix, resources=resources).streamable_http_app(
        streamable_http_path="/mcp"
    )
    async with serve_loopback(app, port) as base:
        yield f"{base}/mcp"


async def _main(port: int) -> None:
    async with open_fixture_server(port=port) as url:
        print(url, flush=True)  # the one line a caller reads
        await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(_main, int(sys.argv[1]) if len(sys.argv) > 1 else 0)
