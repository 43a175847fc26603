"""A remote MCP server with resources, templates and prompts, for the content relay tests.

The SDK's lowlevel ``Server`` over Streamable HTTP on a real loopback port.
It offers a text and a binary resource, a template, prompts (one with
arguments and an embedded resource, one that asks the user first) and
completions; tests change its lists and make it announce the change, and
look at what it was asked. It speaks both eras, as an SDK server does: a
handshake session is asked with a request during ``prompts/get`` and hears
of list changes on its GET stream; a 2026-07-28 client is asked with an
``input_required`` answer and hears of them on its ``subscriptions/listen``
stream. ``handshake_only`` makes it refuse 2026-07-28 requests, as a server
of the older revisions does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.uri_template import UriTemplate
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tests.e2e.relay_support import serve_remote

__all__ = ["BLOB", "ITEM_TEMPLATE", "ContentRemote", "content_server"]

#: The binary resource's bytes, base64 ("agentws" in ASCII).
BLOB = "YWdlbnR3cw=="
ITEM_TEMPLATE = "note://items/{id}"
COLOURS = ("red", "green", "blue")


def _resources() -> list[types.Resource]:
    return [
        types.Resource(uri="note://hello", name="hello", title="Hello", mime_type="text/plain"),
        types.Resource(uri="note://logo", name="logo", mime_type="application/octet-stream"),
        # The remote may not claim agentws's own scheme: left out.
        types.Resource(uri="agentws://handbook/intro", name="imposter"),
    ]


def _prompts() -> list[types.Prompt]:
    return [
        types.Prompt(
            name="greet",
            title="Greeting",
            description="Greets someone in a colour",
            arguments=[
                types.PromptArgument(name="who", required=True),
                types.PromptArgument(name="colour", required=False),
            ],
        ),
        types.Prompt(name="ask", description="Asks the user first"),
    ]


@attrs.define
class ContentRemote:
    """What the remote offers (tests change it) and what it was asked."""

    resources: list[types.Resource] = attrs.field(factory=_resources)
    prompts: list[types.Prompt] = attrs.field(factory=_prompts)
    reads: list[str] = attrs.field(factory=list)
    handshake_only: bool = False
    #: The newest MCP session that asked anything (a handshake link's).
    session: ServerSession | None = None
    #: Where 2026-07-28 listen streams hear of changes.
    bus: InMemorySubscriptionBus = attrs.field(factory=InMemorySubscriptionBus)

    async def announce(self, what: str) -> None:
        """Say that the ``what`` list (resources, prompts) changed, to either era."""
        await self.bus.publish(
            ResourcesListChanged() if what == "resources" else PromptsListChanged()
        )
        if self.session is not None:
            if what == "resources":
                await self.session.send_resource_list_changed()
            else:
                await self.session.send_prompt_list_changed()


class _ChangingServer(Server[Any]):
    """Declares its resource and prompt list changes to handshake sessions too."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options
            or NotificationOptions(prompts_changed=True, resources_changed=True),
            experimental_capabilities,
            extensions,
        )


def _handshake(ctx: Any) -> bool:
    return ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS


async def _topic(ctx: Any, params: types.GetPromptRequestParams) -> str | types.InputRequiredResult:
    """What ``ask`` asks the user first, as the caller's revision asks."""
    question = types.ElicitRequestFormParams(
        message="Which topic?",
        requested_schema={
            "type": "object",
            "properties": {"topic": {"type": "string"}},
            "required": ["topic"],
        },
    )
    if _handshake(ctx):
        answer: Any = await ctx.session.send_request(
            types.ElicitRequest(params=question),
            types.ElicitResult,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
        )
    else:
        answer = (params.input_responses or {}).get("topic")
        if answer is None:
            return types.InputRequiredResult(
                input_requests={"topic": types.ElicitRequest(params=question)},
                request_state="remote-state-1",
            )
        assert params.request_state == "remote-state-1"
    return str((getattr(answer, "content", None) or {}).get("topic", "nothing"))


def _build(state: ContentRemote) -> Server[Any]:
    def saw(ctx: Any) -> None:
        if _handshake(ctx):
            state.session = ctx.session

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        saw(ctx)
        return types.ListResourcesResult(resources=state.resources)

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(uri_template=ITEM_TEMPLATE, name="item", title="An item")
            ]
        )

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        state.reads.append(uri)
        if uri == "note://hello":
            contents: types.TextResourceContents | types.BlobResourceContents = (
                types.TextResourceContents(uri=uri, mime_type="text/plain", text="Hello, world.")
            )
        elif uri == "note://logo":
            contents = types.BlobResourceContents(
                uri=uri, mime_type="application/octet-stream", blob=BLOB
            )
        elif (found := UriTemplate.parse(ITEM_TEMPLATE).match(uri)) is not None:
            contents = types.TextResourceContents(uri=uri, text=f"item {found['id']}")
        else:
            raise MCPError(-32002, "Resource not found", {"uri": uri})
        return types.ReadResourceResult(contents=[contents])

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        saw(ctx)
        return types.ListPromptsResult(prompts=state.prompts)

    async def get_prompt(
        ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        arguments = params.arguments or {}
        if params.name == "greet":
            text = f"Greet {arguments['who']} in {arguments.get('colour', 'grey')}."
            return types.GetPromptResult(
                description="A greeting",
                messages=[
                    types.PromptMessage(
                        role="user", content=types.TextContent(type="text", text=text)
                    ),
                    types.PromptMessage(
                        role="user",
                        content=types.EmbeddedResource(
                            type="resource",
                            resource=types.TextResourceContents(
                                uri="note://hello", mime_type="text/plain", text="Hello, world."
                            ),
                        ),
                    ),
                ],
            )
        if params.name == "ask":
            topic = await _topic(ctx, params)
            if isinstance(topic, types.InputRequiredResult):
                return topic
            return types.GetPromptResult(
                messages=[
                    types.PromptMessage(
                        role="user", content=types.TextContent(type="text", text=f"About {topic}.")
                    )
                ]
            )
        raise MCPError(types.INVALID_PARAMS, f"no prompt {params.name}")

    async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        if isinstance(ref, types.PromptReference) and ref.name == "greet":
            values = [c for c in COLOURS if c.startswith(params.argument.value)]
        elif isinstance(ref, types.ResourceTemplateReference) and ref.uri == ITEM_TEMPLATE:
            values = [i for i in ("7", "42") if i.startswith(params.argument.value)]
        else:
            values = []
        return types.CompleteResult(completion=types.Completion(values=values))

    return _ChangingServer(
        "content-remote",
        on_subscriptions_listen=ListenHandler(state.bus),
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
    )


@asynccontextmanager
async def content_server(state: ContentRemote) -> AsyncIterator[str]:
    """Serve the remote at ``http://127.0.0.1:<port>/mcp`` until the block ends."""
    async with serve_remote(_build(state), handshake=state.handshake_only) as url:
        yield url
