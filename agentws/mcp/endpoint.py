"""The MCP door: ``/mcp/g/<workspace>/<group>`` over both HTTP transports.

This module is the transport; the SDK's server loop (run by
:mod:`agentws.mcp.sessions`) does the protocol. It is a plain ASGI handler
placed in front of the Quart app, because MCP streams need what Quart's
response machinery hides: watching for the client's disconnect while
writing, timing out a write to a client that stopped reading, and a cheap
path for the many small POSTs of a busy session.

- **Streamable HTTP** (2025-03-26 and later): ``POST`` carries one JSON-RPC
  message; ``initialize`` without a session opens one and the response
  carries ``Mcp-Session-Id``. A request is answered with JSON when its
  response is all there is, and upgraded to an SSE stream when the server
  sends something else first (or takes longer than a keep-alive interval).
  ``GET`` with the session opens its stream for server-initiated messages;
  ``DELETE`` ends the session.
- **Legacy HTTP+SSE** (2024-11-05): ``GET`` without a session opens one; the
  first event, ``endpoint``, names ``…/messages?session_id=<id>``, where the
  client POSTs (answered 202; responses arrive on the stream).

Every request is checked in this order: ``Host``/``Origin`` (403), method
(405), bearer token (401), then session (404 for an unknown session or one
opened with another token). Errors are JSON: ``{"error": {"code",
"message"}}``, or a JSON-RPC error object where the client expects one.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

import anyio
import attrs
import mcp_types as types
import pydantic
import trio
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from agentws.asgi import (
    ASGIApp,
    BodyReader,
    HttpRefusal,
    Receive,
    Scope,
    Send,
    encode_headers,
    error_body,
    header,
    respond,
    respond_json,
)
from agentws.config import Settings
from agentws.errors import OverCapacityError, StoreError, UnauthorizedError
from agentws.logs import add_log_context
from agentws.mcp.auth import Authenticator, Caller
from agentws.mcp.forward import (
    FORWARDED_HEADER,
    ForwardError,
    OwnerGoneError,
    SessionForwarder,
    cancel_on_disconnect,
    owner_of,
)
from agentws.mcp.guard import HostOriginGuard
from agentws.mcp.sessions import McpSession, SessionSupervisor, Transport
from agentws.metrics import REJECTED

__all__ = ["McpDoor"]

log = logging.getLogger("agentws.mcp")

_PATH = re.compile(r"/mcp/g/([a-z0-9][a-z0-9-]*)/([a-z0-9][a-z0-9-]*)(/messages)?/?")
SESSION_HEADER = "mcp-session-id"
_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    # nginx would otherwise buffer the stream and deliver nothing until it ends.
    (b"x-accel-buffering", b"no"),
]
_PING = b": ping\n\n"
_GONE = HttpRefusal(400, "disconnected", "the client went away")
_NO_SESSION = "no such session (it may have expired): initialize again"


def _store_unavailable(doing: str, exc: StoreError) -> HttpRefusal:
    log.error("cannot %s: %s", doing, exc.message)
    return HttpRefusal(
        503, "store_unavailable", "the store is unavailable; retry shortly", [("Retry-After", "5")]
    )


def _json_headers(extra: Iterable[tuple[str, str]] = ()) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json"), *encode_headers(extra)]


def _jsonrpc_error(request_id: Any, code: int, message: str, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


@attrs.define(eq=False)
class _Request:
    """One HTTP request to the door, with what its checks established."""

    scope: Scope
    receive: Receive
    send: Send
    workspace: str
    group: str
    messages_path: bool
    caller: Caller | None = None

    @property
    def authorized(self) -> Caller:
        if self.caller is None:
            raise RuntimeError("the request has not been authenticated")
        return self.caller

    @property
    def method(self) -> str:
        return str(self.scope["method"])

    def header(self, name: bytes) -> str | None:
        return header(self.scope, name)

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


@attrs.define(eq=False)
class McpDoor:
    """The ASGI handler of ``/mcp/g/...``; everything else goes to ``app``.

    Given the running service's authenticator, session supervisor and
    forwarder (to other instances' sessions) when it is built.
    """

    app: ASGIApp
    settings: Settings
    auth: Authenticator
    sessions: SessionSupervisor
    forwarder: SessionForwarder
    guard: HostOriginGuard = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.guard = HostOriginGuard.from_settings(self.settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/mcp/"):
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            match = _PATH.fullmatch(scope["path"])
            if match is None:
                raise HttpRefusal(
                    404, "not_found", "no MCP endpoint here: use /mcp/g/<workspace>/<group>"
                )
            request = _Request(scope, receive, tracked_send, match[1], match[2], bool(match[3]))
            add_log_context(workspace=match[1], group=match[2], session=request.session_id)
            await self._handle(request)
        except HttpRefusal as error:
            REJECTED.labels("mcp", error.code).inc()
            await respond_json(send, error.status, error.body(), error.headers)
        except Exception:
            REJECTED.labels("mcp", "internal_error").inc()
            log.exception("MCP request %s %s failed", scope["method"], scope["path"])
            if not started:
                await respond_json(send, 500, error_body("internal_error", "see the server log"))

    async def _handle(self, request: _Request) -> None:
        refusal = self.guard.refusal(request.header(b"host"), request.header(b"origin"))
        if refusal is not None:
            log.warning("refused MCP request: %s", refusal)
            raise HttpRefusal(403, "forbidden", refusal)
        allowed = ("POST",) if request.messages_path else ("GET", "POST", "DELETE")
        if request.method not in allowed:
            raise HttpRefusal(
                405,
                "method_not_allowed",
                f"{request.method} is not supported here; use {', '.join(allowed)}",
                [("Allow", ", ".join(allowed))],
            )
        auth, sessions, forwarder = self.auth, self.sessions, self.forwarder
        try:
            request.caller = await auth.authenticate(
                request.header(b"authorization"), request.workspace, request.group
            )
        except UnauthorizedError as exc:
            challenge = 'Bearer realm="agentws"'
            if request.header(b"authorization"):
                description = exc.message.replace('"', "'")
                challenge += f', error="invalid_token", error_description="{description}"'
            raise HttpRefusal(
                401, "unauthorized", exc.message, [("WWW-Authenticate", challenge)]
            ) from None
        except StoreError as exc:
            raise _store_unavailable("authenticate an MCP request", exc) from None

        session_id = request.session_id
        if session_id is not None and sessions.get(session_id) is None:
            owner_id = owner_of(session_id)
            if owner_id is not None and owner_id != self.settings.instance_id:
                await self._forward(request, forwarder, owner_id)
                return

        if request.messages_path:
            await self._legacy_post(request, sessions)
        elif request.method == "GET":
            if request.header(SESSION_HEADER.encode()) is None:
                await self._legacy_stream(request, sessions)
            else:
                await self._standalone_stream(request, sessions)
        elif request.method == "POST":
            await self._post(request, sessions)
        else:
            await self._delete(request, sessions)

    # --- sessions --------------------------------------------------------------------

    def _session(
        self, request: _Request, sessions: SessionSupervisor, session_id: str, transport: str
    ) -> McpSession:
        session = sessions.get(session_id)
        # Another token's session answers exactly like a session that does not exist.
        if (
            session is None
            or request.caller is None
            or session.token_id != request.caller.token_id
            or session.transport != transport
        ):
            raise HttpRefusal(404, "session_not_found", _NO_SESSION)
        return session

    async def _open(
        self, request: _Request, sessions: SessionSupervisor, transport: Transport
    ) -> McpSession:
        try:
            return await sessions.open(request.authorized, transport)
        except OverCapacityError as exc:
            raise HttpRefusal(
                503, exc.code, exc.message, [("Retry-After", str(exc.retry_after_s))]
            ) from None

    async def _forward(self, request: _Request, forwarder: SessionForwarder, owner_id: str) -> None:
        """Relay a request for another instance's session to that instance."""
        gone = HttpRefusal(
            404,
            "session_not_found",
            "no such session: the instance that held it is gone; initialize again",
        )
        if request.header(FORWARDED_HEADER) is not None:
            # Forwarded once already: the owner does not have it either.
            raise HttpRefusal(404, "session_not_found", _NO_SESSION)
        try:
            owner = await forwarder.owner(owner_id)
        except StoreError as exc:
            raise _store_unavailable("look up the owner of an MCP session", exc) from None
        if owner is None:
            raise gone
        body = await self._read_body(request) if request.method == "POST" else b""
        try:
            await forwarder.forward(owner, request.scope, request.receive, request.send, body=body)
        except OwnerGoneError as exc:
            log.info("MCP request for a session of a gone instance: %s", exc)
            raise gone from None
        except ForwardError as exc:
            log.warning("cannot forward an MCP request: %s", exc)
            raise HttpRefusal(
                502,
                "owner_unreachable",
                f"the instance holding this session ({owner_id}) cannot be reached; retry shortly",
                [("Retry-After", "1")],
            ) from None

    # --- message bodies ---------------------------------------------------------------

    async def _read_body(self, request: _Request) -> bytes:
        limit = self.settings.mcp_max_body_bytes
        timeout_s = self.settings.body_read_timeout_s
        too_large = HttpRefusal(413, "too_large", f"a message may be at most {limit} bytes")
        late = HttpRefusal(
            408,
            "body_read_timeout",
            f"the message did not all arrive within {timeout_s:g} s; send it again, "
            "whole and without pauses",
            # The rest of the body is not read: the connection cannot carry another request.
            [("Connection", "close")],
        )
        reader = BodyReader(request.receive, timeout_s)
        return await reader.read(
            request.header(b"content-length"), too_large, limit, late=late, gone=_GONE
        )

    async def _parse(self, request: _Request, session_id: str | None) -> types.JSONRPCMessage:
        content_type = (request.header(b"content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise HttpRefusal(
                415, "unsupported_media_type", "send JSON-RPC as Content-Type: application/json"
            )
        body = await self._read_body(request)
        try:
            message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_json(
                body, by_name=False
            )
        except pydantic.ValidationError:
            try:
                document = json.loads(body)
            except (ValueError, RecursionError):
                await self._rpc_error(
                    request,
                    400,
                    None,
                    types.PARSE_ERROR,
                    "Parse error: the body is not JSON",
                    session_id,
                )
                raise _Answered from None
            if isinstance(document, list):
                text = "JSON-RPC batches are not supported; send one message per request"
            else:
                text = "Invalid request: not a JSON-RPC 2.0 message"
            request_id = _echoed_id(document)
            await self._rpc_error(request, 400, request_id, types.INVALID_REQUEST, text, session_id)
            raise _Answered from None
        if isinstance(message, types.JSONRPCNotification) and b'"id"' in body:
            # A request whose id is not a string or an integer (1.5, null, true)
            # validates as a notification, which is never answered: say so instead.
            document = json.loads(body)
            if isinstance(document, dict) and "id" in document:
                await self._rpc_error(
                    request,
                    400,
                    None,
                    types.INVALID_REQUEST,
                    "Invalid request: an id must be a string or an integer",
                    session_id,
                )
                raise _Answered
        return message

    async def _rpc_error(
        self,
        request: _Request,
        status: int,
        request_id: Any,
        code: int,
        text: str,
        session_id: str | None,
        data: Any = None,
    ) -> None:
        REJECTED.labels("mcp", "jsonrpc_error").inc()
        headers = _json_headers([("Mcp-Session-Id", session_id)] if session_id else [])
        await respond(request.send, status, _jsonrpc_error(request_id, code, text, data), headers)

    # --- Streamable HTTP ------------------------------------------------------------------

    async def _post(self, request: _Request, sessions: SessionSupervisor) -> None:
        session_id = request.header(SESSION_HEADER.encode())
        try:
            message = await self._parse(request, session_id)
        except _Answered:
            return
        is_request = isinstance(message, types.JSONRPCRequest)
        if session_id is None:
            if not (is_request and message.method == "initialize"):  # type: ignore[union-attr]
                version = request.header(b"mcp-protocol-version")
                if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
                    await self._rpc_error(
                        request,
                        400,
                        getattr(message, "id", None),
                        types.UNSUPPORTED_PROTOCOL_VERSION,
                        f"protocol version {version} is not supported; initialize with one of "
                        f"{', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}",
                        None,
                        {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version},
                    )
                    return
                raise HttpRefusal(
                    400, "missing_session", "no Mcp-Session-Id header: send initialize first"
                )
            session = await self._open(request, sessions, "streamable")
        else:
            session = self._session(request, sessions, session_id, "streamable")
        if not is_request:
            await self._submit(session, message)
            await respond(request.send, 202, b"", [(b"mcp-session-id", session.id.encode())])
            return
        await self._answer(request, session, message)  # type: ignore[arg-type]

    async def _submit(self, session: McpSession, message: types.JSONRPCMessage) -> None:
        try:
            await session.submit(SessionMessage(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise HttpRefusal(
                404, "session_not_found", "the session has ended: initialize again"
            ) from None

    async def _answer(
        self, request: _Request, session: McpSession, message: types.JSONRPCRequest
    ) -> None:
        request_id = str(message.id)
        try:
            replies = await session.request(
                SessionMessage(message, ServerMessageMetadata(request_context=request.caller)),
                request_id,
            )
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise HttpRefusal(
                404, "session_not_found", "the session has ended: initialize again"
            ) from None
        except ValueError as exc:
            await self._rpc_error(
                request, 400, message.id, types.INVALID_REQUEST, str(exc), session.id
            )
            return
        try:
            first: list[tuple[bool, str]] = []
            with trio.move_on_after(self.settings.sse_keepalive_s):
                try:
                    first.append(await replies.receive())
                except trio.EndOfChannel:
                    await self._rpc_error(
                        request,
                        404,
                        message.id,
                        types.CONNECTION_CLOSED,
                        "the session has ended",
                        session.id,
                    )
                    return
            if first and first[0][0]:
                headers = [
                    (b"content-type", b"application/json"),
                    (b"mcp-session-id", session.id.encode()),
                ]
                await respond(request.send, 200, first[0][1].encode(), headers)
                return
            # Something came before the response, or it is slow: stream the rest.
            await self._stream(request, session, _until_final(first, replies), prelude=())
        finally:
            session.forget(request_id)
            replies.close()

    async def _standalone_stream(self, request: _Request, sessions: SessionSupervisor) -> None:
        session = self._session(
            request, sessions, request.header(SESSION_HEADER.encode()) or "", "streamable"
        )
        if not request.accepts("text/event-stream"):
            raise HttpRefusal(406, "not_acceptable", "this stream is text/event-stream")
        receive = session.open_stream()
        if receive is None:
            raise HttpRefusal(409, "conflict", "this session already has an open stream")
        try:
            await self._stream(request, session, _forward(receive), prelude=())
        finally:
            session.detach_stream(receive)

    async def _delete(self, request: _Request, sessions: SessionSupervisor) -> None:
        session_id = request.header(SESSION_HEADER.encode())
        if session_id is None:
            raise HttpRefusal(400, "missing_session", "DELETE needs the Mcp-Session-Id header")
        session = self._session(request, sessions, session_id, "streamable")
        session.close()
        await respond(request.send, 204, b"", [(b"mcp-session-id", session.id.encode())])

    # --- legacy HTTP+SSE ------------------------------------------------------------------

    async def _legacy_stream(self, request: _Request, sessions: SessionSupervisor) -> None:
        if not request.accepts("text/event-stream"):
            raise HttpRefusal(
                406,
                "not_acceptable",
                "GET opens an SSE stream (Accept: text/event-stream); "
                "Streamable HTTP clients POST initialize",
            )
        session = await self._open(request, sessions, "sse")
        receive = session.open_stream()
        if receive is None:  # the session ended before its stream opened
            raise HttpRefusal(
                503, "over_capacity", "the session closed at once; retry", [("Retry-After", "1")]
            )
        root = request.scope.get("root_path", "")
        endpoint = (
            f"{root}/mcp/g/{request.workspace}/{request.group}/messages?session_id={session.id}"
        )
        try:
            await self._stream(
                request,
                session,
                _forward(receive),
                prelude=(f"event: endpoint\ndata: {endpoint}\n\n".encode(),),
            )
        finally:
            # The legacy session lives exactly as long as its stream.
            session.detach_stream(receive)
            session.close()

    async def _legacy_post(self, request: _Request, sessions: SessionSupervisor) -> None:
        session_id = request.session_id
        if not session_id:
            raise HttpRefusal(
                400,
                "missing_session",
                "POST to the URL of the stream's endpoint event (…?session_id=…)",
            )
        session = self._session(request, sessions, session_id, "sse")
        try:
            message = await self._parse(request, session.id)
        except _Answered:
            return
        await self._submit(session, message)
        await respond(
            request.send,
            202,
            b"Accepted",
            [(b"content-type", b"text/plain"), (b"mcp-session-id", session.id.encode())],
        )

    # --- SSE streams ------------------------------------------------------------------------

    async def _stream(
        self,
        request: _Request,
        session: McpSession,
        events: Callable[[], Awaitable[tuple[bytes | None, bool]]],
        *,
        prelude: Iterable[bytes],
    ) -> None:
        """Write an SSE response from ``events`` until it ends, the client leaves, or stalls.

        ``events`` returns ``(chunk, last)``; a None chunk means nothing
        arrived within the keep-alive interval (a comment line is sent).
        """
        send = request.send
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [*_SSE_HEADERS, (b"mcp-session-id", session.id.encode())],
            }
        )
        stall_s, keepalive_s = self.settings.sse_stall_s, self.settings.sse_keepalive_s
        pending = list(prelude)
        completed = False
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_on_disconnect, request.receive, nursery.cancel_scope)
            while True:
                chunk: bytes | None
                if pending:
                    chunk, last = pending.pop(0), False
                else:
                    chunk, last = _PING, False
                    with trio.move_on_after(keepalive_s):
                        chunk, last = await events()
                    if chunk is None:
                        completed = True
                        break
                with trio.move_on_after(stall_s) as stalled:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if stalled.cancelled_caught:
                    log.warning(
                        "session %s: client read nothing for %g s; closing it", session.id, stall_s
                    )
                    session.close()
                    break
                if last:
                    completed = True
                    break
            nursery.cancel_scope.cancel()
        if completed:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


class _Answered(Exception):
    """The request has been answered already (with a JSON-RPC error)."""


def _echoed_id(document: Any) -> str | int | None:
    """The id to answer an invalid message with: its own, if JSON-RPC allows it, else null."""
    request_id = document.get("id") if isinstance(document, dict) else None
    if isinstance(request_id, str) or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    ):
        return request_id
    return None


def _event(data: str) -> bytes:
    return f"event: message\ndata: {data}\n\n".encode()


def _forward(
    receive: trio.MemoryReceiveChannel[str],
) -> Callable[[], Awaitable[tuple[bytes | None, bool]]]:
    async def next_event() -> tuple[bytes | None, bool]:
        try:
            return _event(await receive.receive()), False
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return None, True

    return next_event


def _until_final(
    first: list[tuple[bool, str]], replies: trio.MemoryReceiveChannel[tuple[bool, str]]
) -> Callable[[], Awaitable[tuple[bytes | None, bool]]]:
    async def next_event() -> tuple[bytes | None, bool]:
        if first:
            final, data = first.pop(0)
        else:
            try:
                final, data = await replies.receive()
            except (trio.EndOfChannel, trio.ClosedResourceError):
                return None, True
        return _event(data), final

    return next_event
