"""What a group endpoint answers: the SDK's lowlevel ``Server`` with our handlers.

One :class:`~mcp.server.lowlevel.server.Server` serves every session of the
process; the session (and so the caller, its group and token) reaches each
handler as ``ctx.lifespan_context``. The SDK does the protocol —
negotiation, JSON-RPC, error replies —; these handlers only answer:

- ``tools/list`` / ``tools/call``: the group's catalog; every call goes
  through the permission gate (:mod:`agentws.tools.gate`), which checks the
  arguments against the tool's schema, runs reads, queues writes for an
  admin, asks for confirmation of destructive calls (:mod:`agentws.mcp.confirm`)
  and refuses what the caller may not do ("permission denied", an MCP
  error); a bad call is an error a client can show, never a 500;
- ``resources/list`` / ``resources/read``: the group's exposed documents;
- ``prompts/list`` / ``prompts/get``: the group's skills, with their assets
  as embedded resources.
"""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Awaitable, Callable
from typing import TypeVar

import attrs
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from agentws import __version__
from agentws.config import Settings
from agentws.domain.models import Library, Skill
from agentws.errors import PermissionDeniedError, StoreError
from agentws.mcp.confirm import CONFIRM_ARGUMENT, McpConfirmer, with_confirm_argument
from agentws.mcp.relay_channel import McpRelayChannel
from agentws.mcp.rendered import RenderedResults
from agentws.mcp.sessions import McpSession
from agentws.store import Store
from agentws.tools.builtins import document_uri, find_document
from agentws.tools.caller import ToolCaller
from agentws.tools.catalog import Catalog
from agentws.tools.gate import ToolGate
from agentws.tools.spec import ToolSpec

__all__ = ["PERMISSION_DENIED", "RESOURCE_NOT_FOUND", "build_server"]

#: The MCP specification's error code for an unknown resource.
RESOURCE_NOT_FOUND = -32002
#: Ours, in JSON-RPC's server range: the caller may not run this tool.
PERMISSION_DENIED = -32003

_INSTRUCTIONS = (
    "This server is one agentws group: its tools, its context documents (as resources; "
    "search them with search_context) and its skills (as prompts)."
)

log = logging.getLogger("agentws.mcp")

Context = ServerRequestContext[McpSession]
P = TypeVar("P")
R = TypeVar("R")


def _guarded(handler: Callable[[Context, P], Awaitable[R]]) -> Callable[[Context, P], Awaitable[R]]:
    """Turn our failures into MCP errors that say what to do and leak nothing internal."""

    @functools.wraps(handler)
    async def run(ctx: Context, params: P) -> R:
        try:
            return await handler(ctx, params)
        except MCPError:
            raise
        except StoreError as exc:
            log.error("%s: store error: %s", ctx.method, exc.message)
            raise MCPError(types.INTERNAL_ERROR, "the store is unavailable; retry shortly") from exc
        except Exception as exc:
            log.exception("%s failed in session %s", ctx.method, ctx.lifespan_context.id)
            raise MCPError(
                types.INTERNAL_ERROR, "internal error; the server log has details"
            ) from exc

    return run


def _mcp_tool(tool: ToolSpec) -> types.Tool:
    return types.Tool.model_validate(
        {
            "name": tool.name,
            "title": tool.title,
            "description": tool.tagged_description,
            "inputSchema": (
                with_confirm_argument(tool.input_schema)
                if tool.asks_confirmation
                else tool.input_schema
            ),
            # A queued or confirmation result is not the tool's output: a client
            # checking results against the schema would reject it.
            "outputSchema": tool.output_schema if tool.runs_directly else None,
            "icons": tool.icons,
            "annotations": tool.annotations,
            "_meta": tool.meta,
        }
    )


async def _named_skills(store: Store, ctx: Context) -> dict[str, tuple[Library, Skill]]:
    """The group's skills by prompt name: the slug, qualified by library on a clash."""
    group = ctx.lifespan_context.caller.group
    libraries = {library.id: library for library in await store.group_libraries(group.id)}
    named: dict[str, tuple[Library, Skill]] = {}
    for skill in await store.group_skills(group.id):
        library = libraries.get(skill.library_id)
        if library is None:
            continue
        name = skill.slug if skill.slug not in named else f"{library.slug}.{skill.slug}"
        named[name] = (library, skill)
    return named


def build_server(
    store: Store,
    settings: Settings,
    gate: ToolGate,
    catalog: Catalog,
    rendered: RenderedResults,
) -> Server[McpSession]:
    """The MCP server every group endpoint session of this process runs.

    Tool lists come from ``catalog``; every call goes through ``gate`` (the
    permission gate, which runs, queues or asks for confirmation, and
    audits); ``tools/list`` answers, reused while the catalog stands still,
    are put in ``rendered`` so sessions send their JSON without making it
    again.
    """

    async def list_tools(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # Runs once per catalog version and protocol version; _ListingReuse answers the rest.
        listing = await catalog.tools(ctx.lifespan_context.caller.group)
        return types.ListToolsResult(tools=[_mcp_tool(tool) for tool in listing.tools])

    def unknown_tool(name: str) -> MCPError:
        return MCPError(
            types.INVALID_PARAMS, f"Unknown tool {name!r}: tools/list shows this group's tools"
        )

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        session = ctx.lifespan_context
        # Kept for telling this session, later, what became of a queued call.
        session.server_session = ctx.session
        group = session.caller.group
        arguments = dict(params.arguments or {})
        tool = await catalog.tool(group, params.name)
        if tool is None:
            raise unknown_tool(params.name)
        # The confirm token travels as an argument (models can only set arguments);
        # it is the door's, never the tool's, unless the tool has one of that name.
        presented = None
        if tool.asks_confirmation and CONFIRM_ARGUMENT not in tool.input_schema.get(
            "properties", {}
        ):
            presented = arguments.pop(CONFIRM_ARGUMENT, None)
        caller = ToolCaller.mcp(
            session.caller.token_id, session.caller.token.scope, group, session.id
        )
        confirmer = McpConfirmer(ctx, presented, settings.confirm_ttl_s, store)
        try:
            outcome = await gate.call(
                caller, tool, arguments, confirmer=confirmer, channel=McpRelayChannel(ctx)
            )
        except PermissionDeniedError as exc:
            raise MCPError(PERMISSION_DENIED, exc.message) from None
        if outcome.approval is not None:
            session.await_outcome(outcome.approval.id)
        return outcome.result

    async def list_resources(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        group = ctx.lifespan_context.caller.group
        libraries = {library.id: library for library in await store.group_libraries(group.id)}
        resources = [
            types.Resource(
                uri=document_uri(libraries[doc.library_id], doc),
                name=doc.slug,
                title=doc.title,
                description=f"{doc.title} (library {libraries[doc.library_id].name}, {doc.policy})",
                mime_type=doc.mime_type,
                size=len(doc.body.encode("utf-8")),
            )
            for doc in await store.group_documents(group.id)
            if doc.library_id in libraries
        ]
        return types.ListResourcesResult(resources=resources)

    async def read_resource(
        ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        group = ctx.lifespan_context.caller.group
        found = await find_document(store, group, uri=str(params.uri))
        if found is None:
            raise MCPError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": str(params.uri)})
        library, document = found
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=document_uri(library, document),
                    mime_type=document.mime_type,
                    text=document.body,
                )
            ]
        )

    async def list_prompts(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        prompts = [
            types.Prompt(name=name, title=skill.slug, description=skill.description, arguments=[])
            for name, (_, skill) in (await _named_skills(store, ctx)).items()
        ]
        return types.ListPromptsResult(prompts=prompts)

    async def get_prompt(
        ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        found = (await _named_skills(store, ctx)).get(params.name)
        if found is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"Unknown prompt {params.name!r}: prompts/list shows this group's skills",
            )
        library, skill = found
        messages = [
            types.PromptMessage(
                role="user", content=types.TextContent(type="text", text=skill.prompt)
            )
        ]
        for asset in skill.assets:
            messages.append(
                types.PromptMessage(
                    role="user",
                    content=types.EmbeddedResource(
                        type="resource",
                        resource=types.TextResourceContents(
                            uri=f"agentws://{library.slug}/skills/{skill.slug}/{asset.name}",
                            mime_type=asset.mime_type,
                            text=asset.text,
                        ),
                    ),
                )
            )
        return types.GetPromptResult(description=skill.description, messages=messages)

    async def set_logging_level(
        ctx: Context, params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        ctx.lifespan_context.log_level = params.level
        return types.EmptyResult()

    with warnings.catch_warnings():
        # Deprecated from 2026-07-28 on; the handshake versions served here have
        # it, and outcomes of queued calls are sent as log messages.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        server: Server[McpSession] = Server(
            "agentws",
            version=__version__,
            instructions=_INSTRUCTIONS,
            on_list_tools=_guarded(list_tools),
            on_call_tool=_guarded(call_tool),
            on_list_resources=_guarded(list_resources),
            on_read_resource=_guarded(read_resource),
            on_list_prompts=_guarded(list_prompts),
            on_get_prompt=_guarded(get_prompt),
            on_set_logging_level=set_logging_level,
        )
    # No tracing exporter is configured; the per-message span would be pure cost.
    server.middleware = [_ListingReuse(catalog, rendered)]
    return server


@attrs.define(eq=False)
class _ListingReuse:
    """Answers ``tools/list`` with the wire form the SDK made for the same list before.

    The SDK validates and shapes every result for the session's protocol
    version; for a group with hundreds of tools that costs more than all the
    rest of a listing. The first listing of a catalog version, per protocol
    version, runs the whole chain (handler, validation, shaping) and its
    result is kept with the list; later ones, in any session of the group,
    get that result while the catalog version stands still. Anything unusual
    (a session before its handshake, parameters beyond ``_meta``) takes the
    whole chain.
    """

    catalog: Catalog
    rendered: RenderedResults

    async def __call__(self, ctx: Context, call_next: CallNext) -> HandlerResult:
        if (
            ctx.method != "tools/list"
            or ctx.session.client_params is None
            or (ctx.params and set(ctx.params) - {"_meta"})
        ):
            return await call_next(ctx)
        try:
            listing = await self.catalog.tools(ctx.lifespan_context.caller.group)
        except StoreError:
            return await call_next(ctx)  # the handler says what failed
        key = f"wire:{ctx.protocol_version}"
        wire: HandlerResult = listing.renderings.get(key)
        if wire is None:
            wire = listing.renderings[key] = await call_next(ctx)
        if isinstance(wire, dict):
            self.rendered.remember(wire)
        return wire
