"""The stateless MCP revision (2026-07-28) on the group endpoint's URL.

A request of that revision is self-contained: no ``initialize``, no
``Mcp-Session-Id``; its ``_meta`` carries the protocol version, the
client's capabilities and its name, and its ``MCP-Protocol-Version`` header
names the revision. Such a request is routed here by the door (after the
Host/Origin guard and the bearer token, exactly as any other request) and
served by the SDK's own single-exchange handler with the same
:class:`~mcp.server.lowlevel.server.Server` the sessions run: one JSON-RPC
request in, one response out (JSON, or an SSE stream when the handler sends
notifications such as progress first, or answers after the SDK's wait).
The usual ``tools/call`` is answered here instead, through the SDK's own
checks and runner, as its handler would answer it (:func:`_answer_call`).
``server/discover`` replaces the
handshake; header validation, ``resultType`` on every result and the
``UnsupportedProtocolVersion`` error listing what is served are the SDK's.

The handlers see a :class:`StatelessCaller` as their ``lifespan_context``:
the caller (token, group) of this one request, and nothing that outlives it.
Nothing here holds state between requests, so any instance answers any
request: no sticky routing is needed for this revision.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, cast

import attrs
import trio
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.runner import ServerRunner, aclose_shielded
from mcp.server.session import ServerSession
from mcp.shared.dispatcher import DispatchContext
from mcp.shared.inbound import (
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
    x_mcp_header_map,
)
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import JSONRPCError, JSONRPCRequest, JSONRPCResponse
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request

from agentws.bridges import hangups
from agentws.bridges.mcp_sdk_bridge import (
    SSE_REPLY_HEADERS,
    SSE_REPLY_PING_S,
    exit_stack_has_callbacks,
    handle_modern_request,
    mcp_param_rejection,
    single_exchange_context,
    sse_reply_event,
    to_jsonrpc_response,
    write_jsonrpc_reply,
)
from agentws.doors.mcp.relay.pending_calls import KeepAlive, is_pending_state, owner_of_state
from agentws.doors.mcp.sessions.auth import Caller
from agentws.http.asgi import Receive, Scope, Send, header, replaying, respond
from agentws.tools.builtins import BUILTINS, GET_APPROVAL

__all__ = [
    "SERVING_GROUP",
    "StatelessBody",
    "StatelessCaller",
    "is_stateless",
    "pending_owner",
    "serve_stateless",
]

log = logging.getLogger("agentws.mcp")

_VERSION_HEADER = b"mcp-protocol-version"
_METHOD_HEADER = b"mcp-method"
_NAME_HEADER = b"mcp-name"
# Tools answered within the process, quickly: the context built-ins.
_IN_PROCESS_TOOLS = frozenset({*BUILTINS, GET_APPROVAL.name})
# A request asking for notifications on its response stream.
_STREAM_MARKERS = (b"progressToken", b"io.modelcontextprotocol/logLevel")
# The SDK's handler's keep-alive line on a stateless answer's stream.
_PING = b": ping\r\n\r\n"
#: The group of the stateless request being served: whose tool schemas the
#: SDK's ``Mcp-Param`` header check looks at (:func:`tool_input_schemas`).
SERVING_GROUP: ContextVar[str | None] = ContextVar("agentws_serving_group", default=None)
# Names this process's stateless callers in logs; unique, not secret.
_CALLERS = itertools.count(1)
# Whether a tool's input schema declares an Mcp-Param header, by the schema
# object's identity (kept alongside, so a recycled id is never mistaken for
# it): the catalog hands out the same schema object while it stands still.
_DECLARES_HEADERS: dict[int, tuple[Mapping[str, Any], bool]] = {}
_MAX_SCHEMAS = 1000


def is_stateless(scope: Scope, session_id: str | None) -> bool:
    """Whether a request is of a stateless revision (or claims one we do not know).

    As the SDK routes: a request without a session whose ``MCP-Protocol-Version``
    header names no handshake revision. Unknown values go here too, so that the
    answer is the SDK's structured ``UnsupportedProtocolVersion`` error.
    """
    if session_id is not None:
        return False
    versions = [value for name, value in scope["headers"] if name == _VERSION_HEADER]
    return bool(versions) and versions[0].decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS


@attrs.define(eq=False)
class StatelessCaller:
    """What the handlers know of a stateless request: its caller, and no session.

    It has the attributes the handlers read off a session, so that one set of
    handlers serves both: a queued call's outcome is not pushed to a stateless
    caller (it has no stream to push to); it reads the approval instead.
    """

    caller: Caller
    id: str = attrs.field(factory=lambda: f"stateless.{next(_CALLERS)}")
    log_level: str | None = None
    server_session: ServerSession | None = None
    #: How its response shows it is alive while a call that left the process runs.
    keepalive: KeepAlive | None = None

    @property
    def token_id(self) -> str:
        return self.caller.token_id

    def await_outcome(self, approval_id: str) -> None:
        """Nothing to do: a stateless caller has no stream to be told on."""


_UNPARSED: Any = object()
# Bodies larger than this let other tasks run between their parse and what follows.
_BETWEEN_STEPS_BYTES = 64 * 1024


@attrs.define(eq=False)
class StatelessBody:
    """A stateless request's body, read whole by the door: parsed at most once, when needed.

    The door's checks (an OAuth caller's scope, the instance a call's next
    round belongs to) and the answer of an in-process call all read it;
    each parse of a large call's body costs milliseconds of the event loop.
    """

    raw: bytes
    _document: Any = attrs.field(default=_UNPARSED, init=False)

    @property
    def large(self) -> bool:
        """Whether parsing it takes long enough to let other tasks run after it."""
        return len(self.raw) > _BETWEEN_STEPS_BYTES

    def document(self) -> Any:
        """The body as JSON; None when it is not JSON (the SDK's handler says so)."""
        if self._document is _UNPARSED:
            try:
                self._document = json.loads(self.raw)
            except (ValueError, RecursionError):
                self._document = None
        return self._document


def pending_owner(body: StatelessBody) -> str | None:
    """The instance holding the call a request's ``requestState`` continues, if it names one."""
    if b"agwp_" not in body.raw:  # cheap: most requests continue nothing
        return None
    document = body.document()
    params = document.get("params") if isinstance(document, dict) else None
    state = params.get("requestState") if isinstance(params, dict) else None
    return owner_of_state(state) if isinstance(state, str) and is_pending_state(state) else None


async def serve_stateless(
    server: Server[Any],
    caller: Caller,
    body: StatelessBody,
    scope: Scope,
    receive: Receive,
    send: Send,
) -> None:
    """Answer one stateless request (its body read already) with the SDK's handler.

    The SDK validates the headers against the body, negotiates nothing (the
    request names its revision) and maps errors to HTTP statuses as the
    revision says. A revision it does not serve is refused with the stateless
    revisions it does (those ``server/discover`` lists); the handshake ones
    are found the handshake's way, by ``initialize``. The Host/Origin guard
    ran in the door, so the SDK's own DNS-rebinding check is off here.
    """
    state = StatelessCaller(caller)
    method = header(scope, _METHOD_HEADER)
    # A call that leaves the process may be slow: its client must learn if it
    # hangs up, which the connection tells (hangups) or else only a task
    # reading ``receive`` beside the call would.
    leaves = method == "tools/call" and header(scope, _NAME_HEADER) not in _IN_PROCESS_TOOLS
    hang_up = hangups.current(scope) if leaves else None
    # Progress, log messages and listen streams are answered as SSE, with the
    # SDK's stream machinery; so are calls that leave the process where no
    # hang-up notice comes. Anything else is answered here: with one JSON
    # response, or, for a call still running after the SDK's wait, as SSE.
    streams = (
        method == "subscriptions/listen"
        or (leaves and hang_up is None)
        or any(marker in body.raw for marker in _STREAM_MARKERS)
    )
    serving = SERVING_GROUP.set(caller.group.id)
    try:
        if (
            not streams
            and method == "tools/call"
            and scope["method"] == "POST"
            and await _answer_call(server, state, body, scope, receive, send, hang_up)
        ):
            return
        # Our Send takes the dicts every ASGI server gives; the SDK types it wider.
        await handle_modern_request(
            server,
            None,
            not streams,
            state,
            scope,
            replaying({"type": "http.request", "body": body.raw, "more_body": False}, receive),
            cast(Any, send),
        )
    finally:
        SERVING_GROUP.reset(serving)


async def _answer_call(
    server: Server[Any],
    state: StatelessCaller,
    body: StatelessBody,
    scope: Scope,
    receive: Receive,
    send: Send,
    hang_up: hangups.HangUp | None,
) -> bool:
    """Answer a well-formed call, as the SDK's handler would.

    The SDK's single-exchange handler wraps each request in Starlette's
    request and response objects and shapes the reply twice (a model, then
    a dict, then JSON); for the calls a busy endpoint serves most, that is
    a good part of its work. This runs the same checks, in the same order,
    with the SDK's own functions, and the request through the SDK's own
    :class:`~mcp.server.runner.ServerRunner` (:func:`_serve_one`), and
    writes the JSON-RPC reply once (an error as the SDK writes it). A
    request the checks refuse is left to the SDK's handler, which refuses it
    exactly as it always does: False, before anything ran or was sent.

    A call that leaves the process (``hang_up`` is its connection's notice;
    None for an in-process tool) is cancelled if its client hangs up, and, still
    running after the SDK's wait, its answer becomes an SSE stream, pinged at
    the SDK's interval until it ends with the reply (:class:`_LateAnswer`).
    The SDK's handler does that with two tasks and a channel per call; here
    the call's own wait does it, or, for a call that runs in the request, the
    process's one beating task
    (:class:`~agentws.doors.mcp.relay.pending_calls.KeepAlive`).
    """
    decoded = body.document()
    if not isinstance(decoded, dict) or "id" not in decoded:
        return False
    if body.large:
        await trio.lowlevel.checkpoint()
    try:
        request = JSONRPCRequest.model_validate(decoded)
    except ValidationError:
        return False
    http = Request(scope)
    headers = http.headers
    if not headers.get("content-type", "").lower().startswith("application/json"):
        return False  # the SDK's own Content-Type check, which its handler makes first
    if find_duplicated_routing_header(headers.items()) is not None:
        return False
    verdict = classify_inbound_request(decoded, headers=_folded(scope))
    if not isinstance(verdict, InboundModernRoute):
        return False
    if not _declares_no_header(server, request) and (
        await mcp_param_rejection(server, http, request, verdict, state) is not None
    ):
        return False
    connection = Connection.from_envelope(
        verdict.protocol_version, verdict.client_info, verdict.client_capabilities
    )
    exchange = single_exchange_context(
        TransportContext(kind="streamable-http", can_send_request=False, headers=headers),
        request.id,
        ServerMessageMetadata(request_context=http),
    )
    answering = _serve_one(server, exchange, request.method, request.params, connection, state)
    if hang_up is None:
        answer = await to_jsonrpc_response(request.id, answering)
    else:
        late = _LateAnswer(send)
        state.keepalive = KeepAlive(SSE_REPLY_PING_S, late.beat)
        with trio.CancelScope() as call, hang_up.cancelling(call):
            answer = await to_jsonrpc_response(request.id, answering)
        late.ended = True  # no beat from now on
        if call.cancelled_caught:
            return True  # its client hung up: nobody to answer
        if late.started:
            await late.end(answer)
            return True
    if isinstance(answer, JSONRPCError):
        await write_jsonrpc_reply(answer, scope, receive, send)
        return True
    # As the SDK's JSONRPCResponse dumps it: the result is the wire dict already.
    reply = {"jsonrpc": "2.0", "id": request.id, "result": answer.result}
    await respond(
        send,
        200,
        json.dumps(reply, separators=(",", ":")).encode(),
        [(b"content-type", b"application/json")],
    )
    return True


async def _serve_one(
    server: Server[Any],
    dctx: DispatchContext[TransportContext],
    method: str,
    params: Mapping[str, Any] | None,
    connection: Connection,
    state: StatelessCaller,
) -> dict[str, Any]:
    """The SDK's :func:`~mcp.server.runner.serve_one`, its teardown made only when needed.

    The request runs through the SDK's own :class:`~mcp.server.runner.ServerRunner`,
    as ``serve_one`` runs it. ``serve_one`` then unwinds the connection's exit
    stack under a shielded, bounded cancel scope; handlers nearly never leave
    anything on it, and that scope costs more than the rest of the call's
    framing. It is unwound as the SDK does whenever something was left.
    """
    runner = ServerRunner(server, connection, state)
    try:
        return await runner.on_request(dctx, method, params)
    finally:
        # ``on_request`` is a cached property holding the runner's own bound
        # method: a cycle that would leave the runner, and all the request
        # held, to the cycle collector (dozens of objects a call, at hundreds
        # of calls a second). Deleting the cached value, as ``cached_property``
        # documents, lets reference counting free them as the call ends.
        del runner.on_request
        if exit_stack_has_callbacks(connection):
            await aclose_shielded(connection)


@attrs.define(eq=False)
class _LateAnswer:
    """A stateless answer that may turn into an SSE stream, as the SDK's handler's does.

    Each :meth:`beat` (one per ``SSE_REPLY_PING_S`` the call has run) sends a
    ping, the SSE headers before the first; :meth:`end` sends the reply as
    the stream's last event. An answer that never beat is sent as JSON.
    A beat may come from another task than the request's
    (:mod:`agentws.doors.mcp.relay.beats`): none starts once :attr:`ended`
    is set, and :meth:`end` waits for one being sent.
    """

    send: Send
    started: bool = False
    #: The call's answer is decided: no more beats.
    ended: bool = False
    _beating: trio.Event | None = None

    async def beat(self) -> None:
        if self.ended or self._beating is not None:
            return
        beating = self._beating = trio.Event()
        try:
            if not self.started:
                self.started = True
                await self.send(
                    {"type": "http.response.start", "status": 200, "headers": SSE_REPLY_HEADERS}
                )
            await self.send({"type": "http.response.body", "body": _PING, "more_body": True})
        finally:
            self._beating = None
            beating.set()

    async def end(self, answer: JSONRPCResponse | JSONRPCError) -> None:
        if self._beating is not None:
            await self._beating.wait()
        await self.send(
            {"type": "http.response.body", "body": sse_reply_event(answer), "more_body": False}
        )


def _folded(scope: Scope) -> dict[str, str]:
    """The request's headers as one mapping, the first of repeated ones winning.

    What ``dict()`` of Starlette's headers gives (the SDK's handler passes
    that to the classifier), without looking each name up again.
    """
    folded: dict[str, str] = {}
    for name, value in scope["headers"]:
        folded.setdefault(name.decode("latin-1"), value.decode("latin-1"))
    return folded


def _declares_no_header(server: Server[Any], request: JSONRPCRequest) -> bool:
    """Whether the called tool's schema declares no ``Mcp-Param`` header.

    The SDK's check (:func:`~agentws.bridges.mcp_sdk_bridge.mcp_param_rejection`) can only pass such
    a call:
    it compares the headers the schema declares, and there are none. It
    walks the whole schema to find that out; this walks each schema once.
    False whenever in doubt, and the SDK's check runs.
    """
    lookup = server.get_tool_input_schema
    name = (request.params or {}).get("name")
    if lookup is None or not isinstance(name, str):
        return False
    try:
        schema = lookup(name)
    except Exception:
        return False  # the SDK's check says what it makes of it
    if schema is None:
        return True  # the SDK's check skips a tool whose schema it cannot tell
    found = _DECLARES_HEADERS.get(id(schema))
    if found is None or found[0] is not schema:
        if len(_DECLARES_HEADERS) >= _MAX_SCHEMAS:
            _DECLARES_HEADERS.clear()
        found = _DECLARES_HEADERS[id(schema)] = (schema, bool(x_mcp_header_map(schema)))
    return not found[1]
