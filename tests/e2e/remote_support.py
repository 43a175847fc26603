"""A third-party MCP server on loopback, for remote MCP connector tests.

The third party is the ``mcp`` SDK's own lowlevel server
(``streamable_http_app``) served by Hypercorn on a real port. Tests change
its tools, make it announce ``notifications/tools/list_changed``, stop it and
start it again on the same port, and look at what it saw: the credentials,
the calls, the MCP sessions agentws opened and the requests still open.
It speaks every revision the SDK does (agentws's links then speak
2026-07-28 to it), or only the handshake ones (:func:`handshake_only`), as
a server built on an SDK before 2026-07-28 does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import mcp_types as types
import trio
from mcp.server.lowlevel.server import Server
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agentws.connectors.admin import ConnectorSecret, add_connector, attach_connector
from agentws.connectors.remote_mcp import fetch_tools, remote_deadline
from agentws.connectors.upstream_auth import UpstreamAuth
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import Capability, Connector, ConnectorKind
from agentws.settings.config import Settings
from agentws.settings.secret_box import SecretBox, ensure_key_file
from agentws.store import open_store
from agentws.store.union import Store
from agentws.tools.admin import set_label
from agentws.tools.cache_sync import sync_tool_cache
from agentws.workspaces.admin import create_workspace
from tests.loopback import serve_loopback

LOOPBACK = Allowlist.parse("127.0.0.1/32")
TIMEOUT_S = 10.0

# The SDK's Streamable HTTP client leaves its GET-stream generator to the
# garbage collector when it is closed while the remote still holds the stream;
# trio then warns. That is the SDK client's own cleanup, not ours.
SDK_CLIENT_WARNINGS = (
    "ignore:Async generator 'httpx2.*was garbage collected:ResourceWarning",
    "ignore:Async generator 'httpcore2.*was garbage collected:ResourceWarning",
)


@attrs.define
class ThirdParty:
    """The remote's tools (tests change them) and what it saw."""

    tools: list[types.Tool]
    authorizations: list[str | None] = attrs.field(factory=list)
    calls: list[str] = attrs.field(factory=list)
    #: The arguments of each call, in the order of ``calls``.
    arguments: list[dict[str, Any]] = attrs.field(factory=list)
    #: Every MCP session that listed tools or called one, in order.
    sessions: list[ServerSession] = attrs.field(factory=list)
    #: The ``Mcp-Session-Id`` of each request that listed tools or called one.
    session_ids: list[str | None] = attrs.field(factory=list)
    #: HTTP requests in progress (GET streams included), by method.
    open_requests: dict[str, int] = attrs.field(factory=dict)
    #: The port it last listened on; a restart reuses it.
    port: int = 0
    #: Whether it speaks only the handshake revisions.
    handshake_only: bool = False
    #: The protocol version of each request that listed tools or called one.
    versions: list[str | None] = attrs.field(factory=list)
    #: Where its 2026-07-28 change notifications go (to ``subscriptions/listen`` streams).
    bus: InMemorySubscriptionBus = attrs.field(factory=InMemorySubscriptionBus)
    #: The JSON-RPC id of each tool call, in the order of ``calls``.
    call_ids: list[Any] = attrs.field(factory=list)
    #: While set and not yet fired, every tool call waits for it before answering.
    hold: trio.Event | None = None
    #: Tool calls being answered now, and the most there ever were at once.
    calls_now: int = 0
    most_calls_at_once: int = 0
    #: Tools answered with these bytes (a ``tools/call`` result as JSON) by the
    #: HTTP layer, before the SDK: results made beforehand, however large, cost
    #: the remote nothing when called (it shares the test's event loop).
    canned: dict[str, bytes] = attrs.field(factory=dict)
    #: Names of the tools that answer with a tool error (``isError``).
    failing: set[str] = attrs.field(factory=set)

    def saw(self, ctx: Any) -> None:
        if not self.sessions or self.sessions[-1] is not ctx.session:
            self.sessions.append(ctx.session)
        self.session_ids.append(ctx.request.headers.get("mcp-session-id") if ctx.request else None)
        self.versions.append(ctx.protocol_version)

    @property
    def distinct_sessions(self) -> int:
        """How many MCP sessions with the remote listed tools or called one."""
        return len(set(self.session_ids))

    async def announce_list_changed(self) -> None:
        """Send ``notifications/tools/list_changed``: on the newest session, or to listeners."""
        if self.versions and self.versions[-1] in MODERN_PROTOCOL_VERSIONS:
            await self.bus.publish(ToolsListChanged())
        else:
            await self.sessions[-1].send_tool_list_changed()


def tool(name: str, description: str, **hints: bool) -> types.Tool:
    return types.Tool(
        name=name,
        description=description,
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        annotations=types.ToolAnnotations(**hints) if hints else None,
    )


def handshake_only(app: Any) -> Any:
    """``app`` as a server of the handshake revisions only: 2026-07-28 requests are refused.

    As a server built on an SDK of before that revision answers a request
    without a session: 400, with a JSON-RPC error.
    """

    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or []) if scope["type"] == "http" else {}
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        if version not in MODERN_PROTOCOL_VERSIONS:
            await app(scope, receive, send)
            return
        error = {"code": -32600, "message": "Bad Request: Missing session ID"}
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return asgi


def _canned(app: Any, state: ThirdParty) -> Any:
    """``app``, with calls of ``state.canned`` tools answered with their bytes (JSON)."""

    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not state.canned:
            await app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        request = json.loads(body) if body else {}
        params = request.get("params") if isinstance(request, dict) else None
        name = params.get("name") if isinstance(params, dict) else None
        if request.get("method") != "tools/call" or name not in state.canned:
            given = False

            async def replay() -> dict[str, Any]:
                nonlocal given
                if not given:
                    given = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return dict(await receive())

            await app(scope, replay, send)
            return
        state.calls.append(name)
        answer = b'{"jsonrpc":"2.0","id":%b,"result":%b}' % (
            json.dumps(request["id"]).encode(),
            state.canned[name],
        )
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    return asgi


def _counting(app: Any, state: ThirdParty) -> Any:
    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        method = scope["method"]
        state.open_requests[method] = state.open_requests.get(method, 0) + 1
        try:
            await app(scope, receive, send)
        finally:
            state.open_requests[method] -= 1

    return asgi


@asynccontextmanager
async def third_party_server(state: ThirdParty) -> AsyncIterator[str]:
    """Serve ``state``'s tools at ``http://127.0.0.1:<port>/mcp`` until the block ends."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        request = ctx.request
        state.authorizations.append(request.headers.get("authorization") if request else None)
        state.saw(ctx)
        return types.ListToolsResult(tools=state.tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        state.calls.append(params.name)
        state.arguments.append(dict(params.arguments or {}))
        state.call_ids.append(ctx.request_id)
        state.saw(ctx)
        state.calls_now += 1
        state.most_calls_at_once = max(state.most_calls_at_once, state.calls_now)
        try:
            if state.hold is not None:
                await state.hold.wait()
        finally:
            state.calls_now -= 1
        query = (params.arguments or {}).get("q")
        if params.name in state.failing:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"third-party failed: {query}")],
                is_error=True,
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"third-party found: {query}")]
        )

    server: Server[Any] = Server(
        "third-party",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(state.bus),
    )
    app = server.streamable_http_app(streamable_http_path="/mcp")
    app = _counting(_canned(handshake_only(app) if state.handshake_only else app, state), state)
    async with serve_loopback(app, state.port) as base:
        state.port = int(base.rsplit(":", 1)[1])
        yield f"{base}/mcp"


#: The pin that keeps every call to a fixture of both eras on the stateless link.
MODERN_LINK = "2026-07-28"


async def add_remote(
    store: Store,
    url: str,
    *,
    name: str = "third",
    secret: str | None = None,
    box: SecretBox | None = None,
    allowlist: Allowlist = LOOPBACK,
    protocol: str = "auto",
) -> Connector:
    """Save remote MCP connector ``name`` of workspace ``acme`` at ``url``, as an admin would.

    ``protocol``: what its link speaks; ``auto`` links a fixture of both eras at
    2026-07-28 but serves callers who can be asked over a handshake link too;
    pinned at :data:`MODERN_LINK`, every caller goes over the stateless link.
    """
    return await add_connector(
        store,
        "acme",
        name,
        kind=ConnectorKind.REMOTE_MCP,
        url=url,
        headers={},
        secret=ConnectorSecret(secret) if secret else None,
        box=box,
        allowlist=allowlist,
        actor="t",
        protocol=protocol,
    )


async def add_oauth_remote(store: Store, url: str, name: str, *, allowlist: Allowlist) -> Connector:
    """Save remote MCP connector ``name`` of ``acme`` at ``url``, with ``--auth oauth``,
    attached to acme/ops; not authorized yet."""
    connector = await add_connector(
        store,
        "acme",
        name,
        kind=ConnectorKind.REMOTE_MCP,
        url=url,
        headers={},
        secret=None,
        box=None,
        allowlist=allowlist,
        actor="t",
        auth=UpstreamAuth(mode="oauth"),
    )
    await attach_connector(store, "acme", "ops", name, actor="t")
    return connector


async def attach_remote(
    store: Store, url: str, labels: dict[str, Capability], *, protocol: str = "auto"
) -> Connector:
    """Remote connector ``third`` at ``url``, its tools cached, attached to acme/ops, labelled."""
    connector = await add_remote(store, url, protocol=protocol)
    with remote_deadline(connector, TIMEOUT_S):
        tools = await fetch_tools(connector, box=None, allowlist=LOOPBACK)
    await sync_tool_cache(store, connector, tools, actor="t")
    await attach_connector(store, "acme", "ops", "third", actor="t")
    for name, capability in labels.items():
        await set_label(store, "acme", name, capability, actor="admin")
    return connector


@asynccontextmanager
async def store_and_box(tmp_path: Path) -> AsyncIterator[tuple[Store, SecretBox]]:
    """A SQLite store with workspace ``acme`` and a secret box with a fresh key."""
    ensure_key_file(tmp_path)
    box = SecretBox.from_settings(Settings.from_env({"AGENTWS_DATA_DIR": str(tmp_path)}))
    async with open_store(f"sqlite:///{tmp_path / 'remote.db'}") as store:
        await create_workspace(store, "acme", name=None, actor="t")
        yield store, box


class Outcomes:
    """Approval outcomes a client session was told (``notifications/message``)."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self._changed = trio.Event()

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        if params.logger == "agentws.approvals" and isinstance(params.data, dict):
            self.seen.append(params.data)
            self._changed.set()
            self._changed = trio.Event()

    async def wait(self, approval_id: str) -> dict[str, Any]:
        with trio.fail_after(TIMEOUT_S):
            while True:
                for data in self.seen:
                    if data["approval_id"] == approval_id:
                        return data
                await self._changed.wait()
