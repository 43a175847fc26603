"""What a group endpoint answers about resources: its exposed context documents.

- ``resources/list``: every document the group exposes, at its URI
  ``agentws://<library>/<document>``, then the resources of its remote MCP
  connectors at their own URIs (:mod:`agentws.connectors.remote_content`);
- ``resources/templates/list``: the two URI templates documents are read by,
  :data:`DOCUMENT_TEMPLATE` and :data:`LINES_TEMPLATE` (RFC 6570), then
  the remote connectors' templates;
- ``resources/read``: a document by its URI, or some of its lines with
  ``?lines=START-END`` (1-based, inclusive; ``START-`` runs to the end, a
  single number is one line); or where a queued call of the caller's
  stands, at ``agentws://approvals/<id>`` (:mod:`agentws.doors.mcp.sessions.listen`); any
  other URI is read from the remote connector that lists it (or whose
  template matches it), its answer passed on (what the remote asks first
  reaches the client as its era takes it: :mod:`agentws.doors.mcp.relay.remote_rounds`);
- ``resources/subscribe`` / ``resources/unsubscribe``: on a session, the
  documents whose changes it hears of (:mod:`agentws.doors.mcp.dispatch.list_changes`
  sends ``notifications/resources/updated``).

Handlers read only ``ctx.lifespan_context.caller``; what belongs to a
long-lived session (subscriptions) is kept only when there is one.
"""

from __future__ import annotations

import re
from typing import Any, Protocol
from urllib.parse import parse_qs

import attrs
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agentws.connectors.remote_content import RemoteContent
from agentws.domain.models import ContextDocument, Library
from agentws.doors.mcp.relay.passthrough import StateSeal
from agentws.doors.mcp.relay.remote_rounds import relayed
from agentws.doors.mcp.sessions.listen import read_approval
from agentws.doors.mcp.sessions.session import McpSession
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_records import RecordStore
from agentws.tools.approval_queue import approval_id_of
from agentws.tools.builtins import DOCUMENT_URI_SCHEME, document_uri, find_document
from agentws.tools.caller_channel import CallerChannel

__all__ = [
    "DOCUMENT_TEMPLATE",
    "LINES_TEMPLATE",
    "RESOURCE_NOT_FOUND",
    "LineRange",
    "Resources",
    "parse_lines",
]

#: The MCP specification's error code for an unknown resource, up to 2025-11-25.
RESOURCE_NOT_FOUND = -32002


class _Store(RecordStore, CatalogStore, Protocol):
    """The areas of the store this module uses."""


def not_found(ctx: Context, uri: str) -> MCPError:
    """The error for a resource that does not exist, as the request's revision says.

    From 2026-07-28 on (SEP-2164) it is Invalid Params with the URI; before, -32002.
    """
    code = (
        types.INVALID_PARAMS
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        else RESOURCE_NOT_FOUND
    )
    return MCPError(code, "Resource not found", {"uri": uri})


DOCUMENT_TEMPLATE = f"{DOCUMENT_URI_SCHEME}://{{library}}/{{document}}"
LINES_TEMPLATE = f"{DOCUMENT_URI_SCHEME}://{{library}}/{{document}}{{?lines}}"
_LINES = re.compile(r"(\d+)(?:(-)(\d*))?")
# A session hears of this many documents at most: each costs a comparison per change.
_MAX_SUBSCRIPTIONS = 1000

Context = ServerRequestContext[Any]


@attrs.frozen
class LineRange:
    """Lines ``first`` to ``last`` (1-based, inclusive; ``last`` None: to the end)."""

    first: int
    last: int | None

    def cut(self, text: str) -> str:
        lines = text.splitlines(keepends=True)
        return "".join(lines[self.first - 1 : self.last])


def parse_lines(value: str) -> LineRange:
    """The range a ``lines`` value names: ``12``, ``12-40`` or ``12-``.

    Error handling:
        ValueError saying what a range looks like, for anything else or a
        range that ends before it starts.
    """
    match = _LINES.fullmatch(value.strip())
    if match is None or int(match[1]) < 1:
        raise ValueError(f"lines={value!r}: give START-END, START- or N (lines count from 1)")
    first = int(match[1])
    if match[2] is None:
        return LineRange(first, first)
    last = int(match[3]) if match[3] else None
    if last is not None and last < first:
        raise ValueError(f"lines={value!r}: the range ends before it starts")
    return LineRange(first, last)


def split_uri(uri: str) -> tuple[str, LineRange | None]:
    """The document URI and line range of a URI the templates make.

    Error handling:
        MCPError INVALID_PARAMS for query parameters other than one ``lines``
        or a malformed range.
    """
    base, _, query = uri.partition("?")
    if not query:
        return base, None
    params = parse_qs(query, keep_blank_values=True)
    if set(params) != {"lines"} or len(params["lines"]) != 1:
        raise MCPError(
            types.INVALID_PARAMS,
            f"{uri}: a document URI takes one query parameter, lines (e.g. ?lines=10-20)",
        )
    try:
        return base, parse_lines(params["lines"][0])
    except ValueError as exc:
        raise MCPError(types.INVALID_PARAMS, str(exc)) from None


@attrs.frozen
class Resources:
    """The resource handlers of the group endpoint, reading ``store`` and ``remote``.

    ``seal`` seals a remote's ``requestState`` for a 2026-07-28 caller.
    """

    store: _Store
    remote: RemoteContent
    seal: StateSeal

    async def list(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        group = ctx.lifespan_context.caller.group
        libraries = {lib.id: lib for lib in await self.store.group_libraries(group.id)}
        resources = [
            types.Resource(
                uri=document_uri(libraries[doc.library_id], doc),
                name=doc.slug,
                title=doc.title,
                description=f"{doc.title} (library {libraries[doc.library_id].name}, {doc.policy})",
                mime_type=doc.mime_type,
                size=len(doc.body.encode("utf-8")),
            )
            for doc in await self.store.group_documents(group.id)
            if doc.library_id in libraries
        ]
        resources.extend(await self.remote.resources(group))
        return types.ListResourcesResult(resources=resources)

    async def templates(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        remote = await self.remote.templates(ctx.lifespan_context.caller.group)
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=DOCUMENT_TEMPLATE,
                    name="context-document",
                    title="Context document",
                    description=(
                        "One of this group's context documents, by library slug and "
                        "document slug (resources/list shows them)."
                    ),
                ),
                types.ResourceTemplate(
                    uri_template=LINES_TEMPLATE,
                    name="context-document-lines",
                    title="Lines of a context document",
                    description=(
                        "Some lines of a context document: lines=START-END (from 1, "
                        "inclusive), START- to the end, or N for one line."
                    ),
                ),
                *remote,
            ]
        )

    async def find(self, ctx: Context, uri: str) -> tuple[Library, ContextDocument]:
        """The document ``uri`` names; MCPError RESOURCE_NOT_FOUND if the group has none."""
        found = await find_document(self.store, ctx.lifespan_context.caller.group, uri=uri)
        if found is None:
            raise not_found(ctx, uri)
        return found

    async def read(
        self, ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        requested = str(params.uri)
        if approval_id_of(requested) is not None:
            found = await read_approval(self.store, ctx.lifespan_context.caller, requested)
            if found is None:
                raise not_found(ctx, requested)
            return found
        if not requested.startswith(f"{DOCUMENT_URI_SCHEME}://"):
            return await self._read_remote(ctx, params)
        base, lines = split_uri(requested)
        library, document = await self.find(ctx, base)
        text = document.body if lines is None else lines.cut(document.body)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=requested if lines is not None else document_uri(library, document),
                    mime_type=document.mime_type,
                    text=text,
                )
            ]
        )

    async def _read_remote(
        self, ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        uri = str(params.uri)
        connector = await self.remote.owner(ctx.lifespan_context.caller.group, uri)
        if connector is None:
            raise not_found(ctx, uri)

        async def send(
            channel: CallerChannel,
        ) -> types.ReadResourceResult | types.InputRequiredResult:
            return await self.remote.read(connector, uri, channel)

        return await relayed(ctx, self.seal, connector, f"resources/read {uri}", params, {}, send)

    async def subscribe(
        self, ctx: Context, params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        # Any URI may be followed, also one no document has yet: the session
        # hears of it once a document with that URI appears or changes.
        session = ctx.lifespan_context
        base, _ = split_uri(str(params.uri))
        if isinstance(session, McpSession):
            if (
                base not in session.subscriptions
                and len(session.subscriptions) >= _MAX_SUBSCRIPTIONS
            ):
                raise MCPError(
                    types.INVALID_PARAMS,
                    f"this session follows {_MAX_SUBSCRIPTIONS} resources, its limit; "
                    "unsubscribe from some first",
                )
            session.server_session = ctx.session
            session.subscriptions.add(base)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: Context, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        session = ctx.lifespan_context
        if isinstance(session, McpSession):
            base, _ = split_uri(str(params.uri))
            session.subscriptions.discard(base)
        return types.EmptyResult()
