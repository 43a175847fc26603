"""A remote MCP server with resources, templates and prompts, for the content relay tests.

The SDK's lowlevel ``Server`` over Streamable HTTP on a real loopback port.
It offers a text and a binary resource, a template, prompts (one with
arguments and an embedded resource, one that asks the user first) and
completions; tests change its lists and make it announce the change, and
look at what it was asked.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.uri_template import UriTemplate

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
    #: The newest MCP session that asked anything (the link's).
    session: ServerSession | None = None

    async def announce(self, what: str) -> None:
        """Send ``notifications/<what>/list_changed`` on the newest session."""
        assert self.session is not None
        if what == "resources":
            await self.session.send_resource_list_changed()
        else:
            await self.session.send_prompt_list_changed()


def _build(state: ContentRemote) -> Server[Any]:
    def saw(ctx: Any) -> None:
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

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
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
            answer = await ctx.session.send_request(
                types.ElicitRequest(
                    params=types.ElicitRequestFormParams(
                        message="Which topic?",
                        requested_schema={
                            "type": "object",
                            "properties": {"topic": {"type": "string"}},
                            "required": ["topic"],
                        },
                    )
                ),
                types.ElicitResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
            topic = (answer.content or {}).get("topic", "nothing")
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

    return Server(
        "content-remote",
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
    async with serve_remote(_build(state)) as url:
        yield url
