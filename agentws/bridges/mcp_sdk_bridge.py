"""Every private name and attribute of the ``mcp`` SDK that agentws uses, reached here only.

The SDK's public API does not cover four things agentws does:

- **serving a session without its read loop** (:mod:`agentws.doors.mcp.sessions.dispatcher`):
  the SDK's :class:`~mcp.shared.jsonrpc_dispatcher.JSONRPCDispatcher` is
  driven message by message (:class:`DrivenDispatcher`), which means
  setting its task group and run state and calling its routing method;
  the 2026-07-28 envelope check of the handshake loop is the runner's
  private :func:`has_modern_envelope`;
- **answering a stateless call without Starlette's objects**
  (:mod:`agentws.doors.mcp.dispatch.modern`): the single-exchange handler's own pieces,
  from the private ``mcp.server._streamable_http_modern``;
- **sending a stateless call on the link's own transport**
  (:mod:`agentws.connectors.direct_call`): the client session's request
  stamp and its ``tools/call`` result parser, both private attributes;
- **client-side revision negotiation, input rounds and the transport type**
  (:mod:`agentws.connectors.remote_mcp`, :mod:`agentws.connectors.modern_link`):
  functions and a type the SDK keeps in private client modules.

Each function or class below says what it reaches and why. Importing this
module checks that every private module and name is there, and fails with
:class:`SdkBridgeError` naming what moved; private instance attributes can
only be seen on an instance, so ``tests/unit/test_sdk_bridge.py`` builds
one of each owner and touches every name in :data:`BRIDGED`. A release not
in :data:`TESTED_VERSIONS` is logged as a warning at import. Upgrading the
SDK: the checklist in docs/architecture.md.
"""

from __future__ import annotations

import contextvars
import importlib
import importlib.metadata
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, TypeVar

import attrs
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.server.connection import Connection
from mcp.shared.dispatcher import CallOptions, DispatchContext, OnNotify, OnRequest
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import MessageMetadata, SessionMessage
from mcp.shared.transport_context import TransportContext

__all__ = [
    "BRIDGED",
    "SSE_REPLY_HEADERS",
    "SSE_REPLY_PING_S",
    "TESTED_VERSIONS",
    "Bridged",
    "DrivenDispatcher",
    "SdkBridgeError",
    "TransportStreams",
    "can_stamp_requests",
    "exit_stack_has_callbacks",
    "handle_modern_request",
    "has_modern_envelope",
    "installed_version",
    "mcp_param_rejection",
    "missing",
    "negotiate_auto",
    "parse_call_tool_result",
    "run_input_required_driver",
    "single_exchange_context",
    "sse_reply_event",
    "stamp_request",
    "to_jsonrpc_response",
    "write_jsonrpc_reply",
]

log = logging.getLogger("agentws.mcp")

#: ``mcp`` releases this bridge was tested with (its unit test, the conformance
#: suites). Adding one is the upgrade checklist in docs/architecture.md.
TESTED_VERSIONS = frozenset({"2.3.0"})

_MODERN = "mcp.server._streamable_http_modern"
_DISPATCHER = "mcp.shared.jsonrpc_dispatcher.JSONRPCDispatcher"
_SESSION = "mcp.client.session.ClientSession"


class SdkBridgeError(ImportError):
    """The installed ``mcp`` lacks a private name agentws reaches (it moved or was removed)."""


@attrs.frozen
class Bridged:
    """One private name of the SDK that this module reaches.

    ``owner`` is a module (``kind="module"``: a name in it), a class
    (``"class"``: a method or class attribute) or a class whose instances
    carry the name (``"instance"``: set in ``__init__``).
    """

    owner: str
    name: str
    kind: Literal["module", "class", "instance"]

    def __str__(self) -> str:
        return f"{self.owner}.{self.name}"


#: Every private name reached below. The unit test touches each of them.
BRIDGED: tuple[Bridged, ...] = (
    Bridged("mcp.server.runner", "_has_modern_envelope", "module"),
    Bridged(_DISPATCHER, "_dispatch", "class"),
    Bridged(_DISPATCHER, "_fan_out_closed", "class"),
    Bridged(_DISPATCHER, "_tg", "instance"),
    Bridged(_DISPATCHER, "_running", "instance"),
    Bridged(_DISPATCHER, "_closed", "instance"),
    Bridged(_MODERN, "handle_modern_request", "module"),
    Bridged(_MODERN, "_mcp_param_rejection", "module"),
    Bridged(_MODERN, "_SingleExchangeDispatchContext", "module"),
    Bridged(_MODERN, "_to_jsonrpc_response", "module"),
    Bridged(_MODERN, "_write", "module"),
    Bridged(_MODERN, "_sse_event", "module"),
    Bridged(_MODERN, "_SSE_HEADERS", "module"),
    Bridged(_MODERN, "_SSE_PING_INTERVAL", "module"),
    Bridged(_SESSION, "_stamp", "instance"),
    Bridged(_SESSION, "_call_tool_adapter", "instance"),
    Bridged("mcp.client._probe", "negotiate_auto", "module"),
    Bridged("mcp.client._transport", "TransportStreams", "module"),
    Bridged("mcp.client._input_required", "run_input_required_driver", "module"),
    # The standard library's, not the SDK's: see exit_stack_has_callbacks.
    Bridged("contextlib.AsyncExitStack", "_exit_callbacks", "instance"),
)


def installed_version() -> str:
    """The ``mcp`` release installed in this environment."""
    return importlib.metadata.version("mcp")


def _owner(path: str) -> Any:
    """The module, or the class in a module, that ``path`` names."""
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError:
        module, _, name = path.rpartition(".")
        return getattr(importlib.import_module(module), name)


def missing(reaches: tuple[Bridged, ...] = BRIDGED) -> list[Bridged]:
    """The module and class names of ``reaches`` the installed SDK lacks.

    Instance attributes are not looked at: they exist only on an instance.
    """
    gone = []
    for reach in reaches:
        if reach.kind == "instance":
            continue
        try:
            present = hasattr(_owner(reach.owner), reach.name)
        except (ImportError, AttributeError):
            present = False
        if not present:
            gone.append(reach)
    return gone


def _moved_message(gone: list[Bridged]) -> str:
    names = ", ".join(str(reach) for reach in gone)
    return (
        f"mcp {installed_version()} lacks what agentws reaches through "
        "agentws/bridges/mcp_sdk_bridge.py (written for mcp "
        f"{', '.join(sorted(TESTED_VERSIONS))}): "
        f"{names} moved or was removed; see 'Upgrading mcp or hypercorn' in docs/architecture.md"
    )


_GONE = missing()
if _GONE:
    raise SdkBridgeError(_moved_message(_GONE))
if installed_version() not in TESTED_VERSIONS:
    log.warning(
        "mcp %s is not a release agentws was tested with (%s); every name its bridge "
        "reaches is present",
        installed_version(),
        ", ".join(sorted(TESTED_VERSIONS)),
    )

# Checked just above: each of these is present.
from mcp.client._input_required import (  # noqa: E402
    run_input_required_driver as _run_input_required_driver,
)
from mcp.client._probe import negotiate_auto as _negotiate_auto  # noqa: E402
from mcp.client._transport import TransportStreams as _TransportStreams  # noqa: E402
from mcp.server._streamable_http_modern import (  # noqa: E402
    _SSE_HEADERS,
    _SSE_PING_INTERVAL,
    _mcp_param_rejection,
    _SingleExchangeDispatchContext,
    _sse_event,
    _to_jsonrpc_response,
    _write,
)
from mcp.server._streamable_http_modern import (  # noqa: E402
    handle_modern_request as _handle_modern_request,
)
from mcp.server.runner import _has_modern_envelope  # noqa: E402

R = TypeVar("R")

# --- the server's handshake era (agentws.doors.mcp.sessions.dispatcher) ---------------


def has_modern_envelope(params: Mapping[str, Any] | None) -> bool:
    """Whether a request's ``_meta`` carries the 2026-07-28 protocol-version key.

    Reaches ``mcp.server.runner._has_modern_envelope``: the handshake loop's
    own test, so a session refuses such a request exactly as the SDK's
    handshake connection does.
    """
    return _has_modern_envelope(params)


class DrivenDispatcher(JSONRPCDispatcher[TransportContext]):
    """The SDK's JSON-RPC dispatcher, driven message by message instead of by its read loop.

    ``run()`` would read messages in a task of its own and hold a task group
    for their handlers; here :meth:`deliver` takes the loop's place and
    ``task_group`` (anything with ``start_soon``) stands in for the task
    group. Reaches ``JSONRPCDispatcher._tg``, ``_running`` and ``_closed``
    (set as ``run()`` sets them), ``_dispatch`` (the loop's routing of one
    message) and ``_fan_out_closed`` (what ``run()`` does as it ends).
    """

    def __init__(
        self,
        read_stream: Any,
        write_stream: Any,
        *,
        inline_methods: frozenset[str],
        task_group: Any,
    ) -> None:
        super().__init__(read_stream, write_stream, inline_methods=inline_methods)
        self._tg = task_group
        self._running = True

    @property
    def closed(self) -> bool:
        """Whether :meth:`shut` was called (or the SDK closed it)."""
        return self._closed

    async def deliver(
        self,
        item: SessionMessage,
        on_request: OnRequest,
        on_notify: OnNotify,
        context: contextvars.Context,
    ) -> None:
        """Route one message from the peer, its handlers run in ``context``."""
        await self._dispatch(item, on_request, on_notify, context)

    def shut(self) -> None:
        """As ``run()`` ends: waiters for the peer's answers get ``CONNECTION_CLOSED``."""
        self._running = False
        self._closed = True
        self._fan_out_closed()


def exit_stack_has_callbacks(connection: Connection) -> bool:
    """Whether handlers left cleanups on ``connection``'s exit stack.

    Reaches the standard library's ``AsyncExitStack._exit_callbacks``: most
    sessions leave none, and closing 10,000 of them should not start 10,000
    tasks (``aclose_shielded``) for nothing.
    """
    return bool(connection.exit_stack._exit_callbacks)  # type: ignore[attr-defined]


# --- the server's stateless era (agentws.doors.mcp.dispatch.modern) -------------------------

#: The SDK's ASGI handler for one stateless-era POST (a public name in a private module).
handle_modern_request = _handle_modern_request


async def mcp_param_rejection(
    server: Any, request: Any, message: types.JSONRPCRequest, verdict: Any, lifespan_state: Any
) -> object | None:
    """The SDK's check of a ``tools/call``'s ``Mcp-Param-*`` headers: its rejection, or None.

    Reaches ``_streamable_http_modern._mcp_param_rejection``, so a call
    answered without the SDK's handler is refused exactly as the handler
    would refuse it.
    """
    rejection: object | None = await _mcp_param_rejection(
        server, request, message, verdict, lifespan_state
    )
    return rejection


def single_exchange_context(
    transport: TransportContext, request_id: types.RequestId, metadata: MessageMetadata
) -> DispatchContext[TransportContext]:
    """The dispatch context of one stateless HTTP exchange (no back-channel, no stream).

    Reaches ``_streamable_http_modern._SingleExchangeDispatchContext``: the
    context the SDK's handler gives ``serve_one``.
    """
    context: DispatchContext[TransportContext] = _SingleExchangeDispatchContext(
        transport=transport, request_id=request_id, message_metadata=metadata
    )
    return context


async def to_jsonrpc_response(
    request_id: types.RequestId, answer: Awaitable[dict[str, Any]]
) -> types.JSONRPCResponse | types.JSONRPCError:
    """``answer`` awaited and wrapped as the JSON-RPC reply, errors mapped as the SDK maps them.

    Reaches ``_streamable_http_modern._to_jsonrpc_response``.
    """
    return await _to_jsonrpc_response(request_id, answer)


async def write_jsonrpc_reply(
    reply: types.JSONRPCResponse | types.JSONRPCError, scope: Any, receive: Any, send: Any
) -> None:
    """Write ``reply`` as the SDK's handler does (an error with its mapped HTTP status).

    Reaches ``_streamable_http_modern._write``.
    """
    await _write(reply, scope, receive, send)


#: The headers of a stateless answer that became an SSE stream, as the SDK's
#: handler sends them (``_streamable_http_modern._SSE_HEADERS``).
SSE_REPLY_HEADERS: list[tuple[bytes, bytes]] = list(_SSE_HEADERS)
#: Seconds the SDK's handler waits for a stateless answer before it commits to
#: SSE, and between its pings after (``_streamable_http_modern._SSE_PING_INTERVAL``).
SSE_REPLY_PING_S: float = _SSE_PING_INTERVAL


def sse_reply_event(reply: types.JSONRPCResponse | types.JSONRPCError) -> bytes:
    """``reply`` as the SSE event the SDK's handler ends such a stream with.

    Reaches ``_streamable_http_modern._sse_event``.
    """
    return _sse_event(reply)


# --- the client (agentws.connectors) -----------------------------------------

#: The read and write streams an MCP client transport yields
#: (``mcp.client._transport.TransportStreams``).
TransportStreams = _TransportStreams


async def negotiate_auto(session: ClientSession) -> None:
    """Agree on a protocol revision with the remote, stateless first, as the SDK's client does.

    Reaches ``mcp.client._probe.negotiate_auto``.
    """
    await _negotiate_auto(session)


async def run_input_required_driver(
    first: types.InputRequiredResult,
    *,
    dispatch: Callable[[str, Any], Awaitable[Any]],
    retry: Callable[[Any, str | None], Awaitable[R | types.InputRequiredResult]],
) -> R:
    """Answer ``input_required`` rounds until the remote gives its result.

    Reaches ``mcp.client._input_required.run_input_required_driver``, the
    SDK's own round driver (its round limit, its error for too many).
    """
    result: R = await _run_input_required_driver(first, dispatch=dispatch, retry=retry)
    return result


def can_stamp_requests(session: ClientSession) -> bool:
    """Whether ``session`` has the request stamp and result parser used below."""
    return callable(getattr(session, "_stamp", None)) and hasattr(session, "_call_tool_adapter")


def stamp_request(session: ClientSession, data: dict[str, Any], options: CallOptions) -> None:
    """Stamp a request as ``session`` would send it: ``_meta`` and the ``Mcp-*`` headers.

    Reaches ``ClientSession._stamp`` (it adds the protocol version, client
    info and capabilities to ``data`` and the routing headers to ``options``).
    """
    session._stamp(data, options)


def parse_call_tool_result(
    session: ClientSession, raw: dict[str, Any]
) -> types.CallToolResult | types.InputRequiredResult:
    """``raw`` parsed as ``session`` parses a ``tools/call`` result.

    Reaches ``ClientSession._call_tool_adapter`` (the revision's union of
    result kinds). RuntimeError for a kind agentws does not know.
    """
    result = session._call_tool_adapter.validate_python(raw, by_name=False)
    if not isinstance(result, types.CallToolResult | types.InputRequiredResult):
        raise RuntimeError(f"a result of a kind agentws does not know: {type(result).__name__}")
    return result
