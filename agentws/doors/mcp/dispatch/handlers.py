"""What a group endpoint answers: the SDK's lowlevel ``Server`` with our handlers.

One :class:`~mcp.server.lowlevel.server.Server` serves every session of the
process; the session (and so the caller, its group and token) reaches each
handler as ``ctx.lifespan_context``. The SDK does the protocol —
negotiation, JSON-RPC, error replies —; these handlers only answer:

- ``tools/list`` / ``tools/call``: the group's catalog; every call goes
  through the permission gate (:mod:`agentws.tools.gate`), which checks the
  arguments against the tool's schema, runs reads, queues writes for an
  admin, asks for confirmation of destructive calls (:mod:`agentws.doors.mcp.dispatch.confirm`)
  and refuses what the caller may not do ("permission denied", an MCP
  error); a bad call is an error a client can show, never a 500;
- ``resources/*``: the group's exposed documents (:mod:`agentws.doors.mcp.dispatch.resources`);
- ``prompts/list`` / ``prompts/get``: the group's skills, with their
  arguments and assets (:mod:`agentws.doors.mcp.dispatch.prompts`);
- ``completion/complete``: prompt arguments and template variables
  (:mod:`agentws.doors.mcp.dispatch.completion`).

The list-changed and resource-updated notifications are sent from outside
any request, by :mod:`agentws.doors.mcp.dispatch.list_changes`; the capabilities that
announce them are :data:`NOTIFICATIONS`.
"""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import attrs
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agentws import __version__
from agentws.connectors.remote_content import RemoteContent
from agentws.core.errors import PermissionDeniedError, StoreError
from agentws.domain.call_arguments import CallArguments
from agentws.domain.models import ConnectorKind
from agentws.doors.mcp.dispatch.completion import Completions
from agentws.doors.mcp.dispatch.confirm import CONFIRM_ARGUMENT, McpConfirmer, with_confirm_argument
from agentws.doors.mcp.dispatch.modern import SERVING_GROUP
from agentws.doors.mcp.dispatch.prompts import Prompts
from agentws.doors.mcp.dispatch.resources import RESOURCE_NOT_FOUND, Resources
from agentws.doors.mcp.relay.modern_calls import call_modern
from agentws.doors.mcp.relay.passthrough import (
    ALREADY_CONFIRMED,
    CallBinding,
    Passthrough,
    StateSeal,
)
from agentws.doors.mcp.relay.pending_calls import PendingCalls, is_pending_state
from agentws.doors.mcp.relay.relay_channel import McpRelayChannel
from agentws.doors.mcp.sessions.listen import ListenStreams
from agentws.doors.mcp.sessions.rendered import RenderedResults
from agentws.doors.mcp.sessions.session import McpSession
from agentws.settings.config import Settings
from agentws.store.sql_approval_runs import ApprovalRunStore
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_records import RecordStore
from agentws.tools.caller import ToolCaller
from agentws.tools.caller_channel import CallerChannel
from agentws.tools.catalog import Catalog
from agentws.tools.gate import Confirmer, ToolGate
from agentws.tools.spec import ToolSpec

__all__ = ["NOTIFICATIONS", "PERMISSION_DENIED", "RESOURCE_NOT_FOUND", "build_server"]

#: Ours, in JSON-RPC's server range: the caller may not run this tool.
PERMISSION_DENIED = -32003

_INSTRUCTIONS = (
    "This server is one agentws group: its tools, its context documents (as resources; "
    "search them with search_context) and its skills (as prompts)."
)

#: Sessions hear when their group's tools, resources or prompts change
#: (:mod:`agentws.doors.mcp.dispatch.list_changes`): the capabilities say so.
NOTIFICATIONS = NotificationOptions(
    prompts_changed=True, resources_changed=True, tools_changed=True
)

log = logging.getLogger("agentws.mcp")

Context = ServerRequestContext[McpSession]
P = TypeVar("P")
R = TypeVar("R")


class _Store(RecordStore, ApprovalRunStore, CatalogStore, Protocol):
    """The areas of the store this module uses."""


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


def _input_schema(catalog: Catalog, name: str) -> dict[str, Any] | None:
    """The schema the SDK checks a stateless call's ``Mcp-Param`` headers against.

    From the group's tools as last listed (a client lists before it calls);
    None, as the SDK does when it cannot tell, skips the check: the gate
    checks the arguments themselves in any case.
    """
    group_id = SERVING_GROUP.get()
    listing = catalog.last(group_id) if group_id is not None else None
    tool = listing.by_name.get(name) if listing is not None else None
    return tool.input_schema if tool is not None else None


async def _no_run(channel: CallerChannel) -> types.CallToolResult:
    raise AssertionError("a pending call's next round runs nothing new")


def build_server(
    store: _Store,
    settings: Settings,
    gate: ToolGate,
    catalog: Catalog,
    rendered: RenderedResults,
    listens: ListenStreams,
    pending: PendingCalls,
    remote: RemoteContent,
) -> Server[McpSession]:
    """The MCP server every group endpoint session of this process runs.

    Tool lists come from ``catalog``; every call goes through ``gate`` (the
    permission gate, which runs, queues or asks for confirmation, and
    audits); ``tools/list`` answers, reused while the catalog stands still,
    are put in ``rendered`` so sessions send their JSON without making it
    again. Resources, templates and prompts of the groups' remote MCP
    connectors come from ``remote``.
    """

    async def list_tools(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # Runs once per catalog version and protocol version; _ListingReuse answers the rest.
        listing = await catalog.tools(ctx.lifespan_context.caller.group)
        return types.ListToolsResult(tools=[_mcp_tool(tool) for tool in listing.tools])

    # Wraps a remote's requestState for a stateless caller (agentws.doors.mcp.relay.passthrough).
    state_seal = StateSeal.of(gate.keys, settings.confirm_ttl_s)

    def unknown_tool(name: str) -> MCPError:
        return MCPError(
            types.INVALID_PARAMS, f"Unknown tool {name!r}: tools/list shows this group's tools"
        )

    async def call_tool(
        ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if is_pending_state(params.request_state):
            # The next round of a stateless client's call waiting for its input.
            return await call_modern(ctx, params, pending, True, _no_run)
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
        token = session.caller.token
        caller = ToolCaller.mcp(token.id, token.scope, group, session.id, token.oauth_client_id)
        prepared = CallArguments.of(tool.name, arguments, tool.input_schema)
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        remote = tool.connector_kind is ConnectorKind.REMOTE_MCP
        passthrough = None
        if modern and remote:
            binding = CallBinding(
                session.caller.token_id, tool.connector_id or "", tool.name, prepared.hash
            )
            passthrough = Passthrough.of(state_seal, binding, params)
        confirmer: Confirmer = McpConfirmer(
            ctx,
            presented,
            settings.confirm_ttl_s,
            store,
            input_responses=params.input_responses,
            request_state=params.request_state,
        )
        if passthrough is not None and passthrough.continuing:
            confirmer = ALREADY_CONFIRMED

        async def run(channel: CallerChannel) -> types.CallToolResult | types.InputRequiredResult:
            try:
                outcome = await gate.call(
                    caller, tool, prepared, confirmer=confirmer, channel=channel
                )
            except PermissionDeniedError as exc:
                raise MCPError(PERMISSION_DENIED, exc.message) from None
            if outcome.approval is not None:
                session.await_outcome(outcome.approval.id)
            return outcome.result

        if modern:
            return await call_modern(ctx, params, pending, remote, run, passthrough)
        return await run(McpRelayChannel(ctx))

    async def set_logging_level(
        ctx: Context, params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        ctx.lifespan_context.log_level = params.level
        return types.EmptyResult()

    resources = Resources(store, remote, state_seal)
    prompts, completions = Prompts(store, remote, state_seal), Completions(store, remote)
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
            on_list_resources=_guarded(resources.list),
            on_list_resource_templates=_guarded(resources.templates),
            on_read_resource=_guarded(resources.read),
            on_subscribe_resource=_guarded(resources.subscribe),
            on_unsubscribe_resource=_guarded(resources.unsubscribe),
            on_list_prompts=_guarded(prompts.list),
            on_get_prompt=_guarded(prompts.get),
            on_completion=_guarded(completions.complete),
            on_set_logging_level=set_logging_level,
            on_subscriptions_listen=listens,
        )
    server.get_tool_input_schema = functools.partial(_input_schema, catalog)
    # No tracing exporter is configured; the per-message span would be pure cost.
    server.middleware = [_keep_server_session, _ListingReuse(catalog, rendered)]
    return server


async def _keep_server_session(ctx: Context, call_next: CallNext) -> HandlerResult:
    """Keep a session's handle toward its client, for notifications outside any request."""
    session = ctx.lifespan_context
    if isinstance(session, McpSession) and session.server_session is None:
        session.server_session = ctx.session
    return await call_next(ctx)


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
