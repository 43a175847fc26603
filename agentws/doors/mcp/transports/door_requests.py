"""What the MCP door reads of a request: who asked, its session, its JSON-RPC message.

A :class:`DoorRequest` is one HTTP request with what the door's checks
established. :func:`parse_message` reads its body within the size and time
limits and validates the one JSON-RPC message it must hold (or, on a
2025-03-26 session, the batch it may hold: :class:`Batch`); a malformed one
is answered here with a JSON-RPC error (:func:`rpc_error`) and the caller
learns of it by :class:`Answered`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs

import anyio
import attrs
import mcp_types as types
import pydantic
import trio
from mcp.server.streamable_http import check_accept_headers
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request

from agentws.core.metrics import REJECTED
from agentws.doors.mcp.sessions.auth import Caller
from agentws.doors.mcp.sessions.replay import Connection
from agentws.doors.mcp.sessions.session import McpSession
from agentws.http.asgi import (
    BodyReader,
    BodyRefusals,
    HttpRefusal,
    Receive,
    Scope,
    Send,
    encode_headers,
    late_body,
    respond,
)
from agentws.settings.config import Settings

__all__ = [
    "SESSION_HEADER",
    "Answered",
    "Batch",
    "DoorRequest",
    "check_accept",
    "check_content_type",
    "parse_message",
    "read_body",
    "refuse_unknown_version",
    "rpc_error",
    "submit",
    "submit_request",
]

SESSION_HEADER = "mcp-session-id"
_REFUSALS = BodyRefusals(
    too_large=lambda limit: HttpRefusal(
        413,
        "too_large",
        f"a message may be at most {limit:,} bytes (AGENTWS_MCP_MAX_BODY_BYTES): pass "
        "large content to a tool by reference, not inside its arguments",
        # The rest of the body is not read: the connection cannot carry another request.
        [("Connection", "close")],
    ),
    # The rest of the body is not read: the connection cannot carry another request.
    late=lambda timeout_s: late_body(
        timeout_s, what="the message", headers=[("Connection", "close")]
    ),
    gone=lambda: HttpRefusal(400, "disconnected", "the client went away"),
)


# Bodies larger than this let other tasks run between their parse and validation.
_BETWEEN_STEPS_BYTES = 64 * 1024

# Accept header values seen, and whether each takes JSON and SSE: clients send
# the same one with every request, and reading it is the SDK's (below).
_ACCEPTS: dict[str, tuple[bool, bool]] = {}
_MAX_ACCEPTS = 256


def _json_headers(extra: Iterable[tuple[str, str]] = ()) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json"), *encode_headers(extra)]


def _jsonrpc_error(request_id: Any, code: int, message: str, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


@attrs.define(eq=False)
class DoorRequest:
    """One HTTP request to the door, with what its checks established."""

    scope: Scope
    receive: Receive
    send: Send
    workspace: str
    group: str
    messages_path: bool
    #: Reads the body; its answers end the request well while the body is still coming.
    body: BodyReader
    caller: Caller | None = None
    # The request's headers by name, the first of repeated ones winning (as
    # header() finds them): made at the first look, for the many that follow.
    _headers: dict[bytes, bytes] | None = attrs.field(default=None, init=False)

    @property
    def authorized(self) -> Caller:
        if self.caller is None:
            raise RuntimeError("the request has not been authenticated")
        return self.caller

    @property
    def method(self) -> str:
        return str(self.scope["method"])

    def header(self, name: bytes) -> str | None:
        """The first value of header ``name`` (lower case), or None."""
        headers = self._headers
        if headers is None:
            headers = self._headers = {}
            for key, value in self.scope["headers"]:
                headers.setdefault(key, value)
        value = headers.get(name)
        return None if value is None else value.decode("latin-1")

    @property
    def session_id(self) -> str | None:
        """The session the request names: the header, or the legacy POST URL's query."""
        if self.messages_path:
            query: dict[str, list[str]] = parse_qs(
                self.scope.get("query_string", b"").decode("latin-1")
            )
            from_query = query.get("session_id")
            if from_query and from_query[0]:
                return from_query[0]
        return self.header(SESSION_HEADER.encode())

    def accepts(self, media_type: str) -> bool:
        accept = self.header(b"accept") or "*/*"
        return media_type in accept or "*/*" in accept

    def accepts_json_and_sse(self) -> tuple[bool, bool]:
        """Whether ``Accept`` takes JSON, SSE: read as the SDK's reference server reads it.

        Wildcards count (``*/*``, ``application/*``, ``text/*``); no ``Accept`` takes neither.
        """
        accept = self.header(b"accept") or ""
        found = _ACCEPTS.get(accept)
        if found is None:
            if len(_ACCEPTS) >= _MAX_ACCEPTS:
                _ACCEPTS.clear()
            only = {"type": "http", "headers": [(b"accept", accept.encode("latin-1"))]}
            found = _ACCEPTS[accept] = check_accept_headers(Request(only))
        return found


class Answered(Exception):
    """The request has been answered already (with a JSON-RPC error)."""


class Batch(Exception):
    """The body is a JSON-RPC batch (allowed on this session): its messages, in order."""

    def __init__(self, messages: list[types.JSONRPCMessage]) -> None:
        super().__init__(f"a batch of {len(messages)} messages")
        self.messages = messages


def _echoed_id(document: Any) -> str | int | None:
    """The id to answer an invalid message with: its own, if JSON-RPC allows it, else null."""
    request_id = document.get("id") if isinstance(document, dict) else None
    if isinstance(request_id, str) or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    ):
        return request_id
    return None


async def read_body(request: DoorRequest, settings: Settings) -> bytes:
    """The request's body, refused if over ``mcp_max_body_bytes`` or slower than allowed."""
    return await request.body.read(
        request.header(b"content-length"), settings.mcp_max_body_bytes, _REFUSALS
    )


def check_content_type(request: DoorRequest) -> None:
    """A POST carries JSON-RPC as ``application/json`` (415 otherwise)."""
    content_type = (request.header(b"content-type") or "").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise HttpRefusal(
            415, "unsupported_media_type", "send JSON-RPC as Content-Type: application/json"
        )


async def parse_message(
    request: DoorRequest, settings: Settings, session_id: str | None, *, batches: bool = False
) -> types.JSONRPCMessage:
    """The request's one JSON-RPC message; :class:`Answered` once a JSON-RPC error was sent.

    With ``batches`` (a 2025-03-26 session), a body that is a JSON array of
    at most ``mcp_max_batch_entries`` messages raises :class:`Batch` with
    them; other revisions refuse batches.
    """
    check_content_type(request)
    body = await read_body(request, settings)
    document = await _parsed(request, body, session_id)
    if isinstance(document, list) and batches:
        raise Batch(await _batch(request, document, session_id, settings.mcp_max_batch_entries))
    return await _validated(request, document, session_id)


async def _parsed(request: DoorRequest, body: bytes, session_id: str | None) -> Any:
    """The body as JSON (a JSON-RPC parse error is answered otherwise)."""
    try:
        # Parsed first, then validated: pydantic's error for a body that is no
        # message (every member of the message union tried) costs ten times the
        # parse, and validating JSON text costs more than the parse that
        # validating the document needs.
        document = json.loads(body)
    except (ValueError, RecursionError):
        await rpc_error(
            request, 400, None, types.PARSE_ERROR, "Parse error: the body is not JSON", session_id
        )
        raise Answered from None
    if len(body) > _BETWEEN_STEPS_BYTES:
        # The parse took milliseconds: let other requests run before the validation.
        await trio.lowlevel.checkpoint()
    return document


async def _validated(
    request: DoorRequest, document: Any, session_id: str | None
) -> types.JSONRPCMessage:
    """``document`` (a request's parsed body) as one JSON-RPC message.

    Error handling:
        :class:`Answered` once a JSON-RPC error was sent: it is no message,
        a batch (which this session does not take), or a request whose id is
        neither a string nor an integer.
    """
    try:
        message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_python(
            document, by_name=False
        )
    except pydantic.ValidationError:
        if isinstance(document, list):
            text = (
                "JSON-RPC batches are not supported (only 2025-03-26 sessions take them); "
                "send one message per request"
            )
        else:
            text = "Invalid request: not a JSON-RPC 2.0 message"
        request_id = _echoed_id(document)
        await rpc_error(request, 400, request_id, types.INVALID_REQUEST, text, session_id)
        raise Answered from None
    if _bad_id(message, document):
        await rpc_error(
            request,
            400,
            None,
            types.INVALID_REQUEST,
            "Invalid request: an id must be a string or an integer",
            session_id,
        )
        raise Answered
    return message


def _bad_id(message: types.JSONRPCMessage, document: Any) -> bool:
    """Whether ``document`` is a request whose id is not a string or an integer.

    Such a request (id 1.5, null, true) validates as a notification, which is
    never answered: it is refused instead.
    """
    return (
        isinstance(message, types.JSONRPCNotification)
        and isinstance(document, dict)
        and "id" in document
    )


async def _batch(
    request: DoorRequest, document: list[Any], session_id: str | None, most: int
) -> list[types.JSONRPCMessage]:
    """A batch's messages; the whole batch is refused if one is not a JSON-RPC message."""
    if len(document) > most:
        # Each request of a batch opens a stream and a task: bounded before any is.
        await rpc_error(
            request,
            400,
            None,
            types.INVALID_REQUEST,
            f"Invalid request: a batch may hold at most {most} messages and this one holds "
            f"{len(document):,} (AGENTWS_MCP_MAX_BATCH_ENTRIES); nothing in the batch was "
            "processed",
            session_id,
        )
        raise Answered
    messages: list[types.JSONRPCMessage] = []
    for index, entry in enumerate(document):
        try:
            message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_python(
                entry, by_name=False
            )
        except pydantic.ValidationError:
            message = None  # type: ignore[assignment]
        if message is None or _bad_id(message, entry):
            await rpc_error(
                request,
                400,
                None,
                types.INVALID_REQUEST,
                f"Invalid request: batch entry {index} is not a JSON-RPC 2.0 message "
                "(an id must be a string or an integer); nothing in the batch was processed",
                session_id,
            )
            raise Answered
        messages.append(message)
    if not messages:
        await rpc_error(
            request, 400, None, types.INVALID_REQUEST, "Invalid request: an empty batch", session_id
        )
        raise Answered
    return messages


async def rpc_error(
    request: DoorRequest,
    status: int,
    request_id: Any,
    code: int,
    text: str,
    session_id: str | None,
    data: Any = None,
) -> None:
    """Answer with a JSON-RPC error object (and count the rejection)."""
    REJECTED.labels("mcp", "jsonrpc_error").inc()
    headers = _json_headers([("Mcp-Session-Id", session_id)] if session_id else [])
    await respond(request.send, status, _jsonrpc_error(request_id, code, text, data), headers)


def check_accept(request: DoorRequest) -> None:
    """406 unless a POST takes JSON and SSE, a GET SSE (as the SDK's reference server asks)."""
    if request.method not in ("GET", "POST"):
        return
    takes_json, takes_sse = request.accepts_json_and_sse()
    if request.method == "GET" and not takes_sse:
        raise HttpRefusal(
            406,
            "not_acceptable",
            "GET opens an SSE stream: send Accept: text/event-stream "
            "(Streamable HTTP clients POST initialize)",
        )
    if request.method == "POST" and not (takes_json and takes_sse):
        raise HttpRefusal(
            406,
            "not_acceptable",
            "a POST must accept both application/json and text/event-stream "
            "(Accept: application/json, text/event-stream)",
        )


async def refuse_unknown_version(request: DoorRequest, session: McpSession) -> bool:
    """Refuse a session request whose ``MCP-Protocol-Version`` agentws does not speak.

    Returns whether it was refused (400, a JSON-RPC error). No header means
    the negotiated version. A known version other than the negotiated one
    passes, as with the SDK's reference server (whose conformance suite sends
    2025-03-26 on a session of any version).
    """
    version = request.header(b"mcp-protocol-version")
    if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
        return False
    await rpc_error(
        request,
        400,
        None,
        types.UNSUPPORTED_PROTOCOL_VERSION,
        f"Bad Request: unsupported MCP-Protocol-Version {version!r}; this session speaks "
        f"{session.protocol_version or 'the version it initialized with'} "
        "(send it, or no header)",
        session.id,
        {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version},
    )
    return True


_SESSION_ENDED = HttpRefusal(404, "session_not_found", "the session has ended: initialize again")


async def submit(session: McpSession, message: types.JSONRPCMessage) -> None:
    """Hand a client message that is not a request to the session (404 once it ended)."""
    try:
        await session.submit(SessionMessage(message))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        raise _SESSION_ENDED from None


async def submit_request(
    request: DoorRequest, session: McpSession, message: types.JSONRPCRequest
) -> Connection | None:
    """Submit a request; the connection to its replies, or None once refused with an error."""
    try:
        return await session.request(
            SessionMessage(message, ServerMessageMetadata(request_context=request.caller)),
            str(message.id),
        )
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        raise _SESSION_ENDED from None
    except ValueError as exc:
        await rpc_error(request, 400, message.id, types.INVALID_REQUEST, str(exc), session.id)
        return None
