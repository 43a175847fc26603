"""The MCP door: ``/mcp/g/<workspace>/<group>`` over both HTTP transports.

This module is the transport; the SDK's dispatcher and server runner
(driven by :mod:`agentws.doors.mcp.sessions.dispatcher`) do the protocol. It is a plain ASGI handler
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
  Every SSE event has an id; ``GET`` with ``Last-Event-ID`` resumes the
  stream that id belongs to (:mod:`agentws.doors.mcp.sessions.replay`). Sessions of
  2025-11-25 and later get a priming event (an id, empty data, ``retry``)
  first on every stream. A 2025-03-26 session also takes JSON-RPC batches.
- **Legacy HTTP+SSE** (2024-11-05): ``GET`` without a session opens one; the
  first event, ``endpoint``, names ``…/messages?session_id=<id>``, where the
  client POSTs (answered 202; responses arrive on the stream).

Every request is checked in this order: ``Host``/``Origin`` (403), method
(405; ``OPTIONS`` is a CORS preflight, :mod:`agentws.doors.mcp.transports.cors`), bearer
token (401), ``Accept`` (406: a Streamable HTTP ``POST`` takes JSON and SSE,
a ``GET`` SSE), then session (404 for an unknown session or one opened with
another token) and its ``MCP-Protocol-Version`` (400 for a version agentws
does not speak; none means the negotiated one). Errors are JSON:
``{"error": {"code", "message"}}``, or a JSON-RPC error object where the
client expects one.

Reading a request's message is :mod:`agentws.doors.mcp.transports.door_requests`; writing an
SSE stream is :mod:`agentws.doors.mcp.transports.streams`; the legacy transport's two
requests are served by :mod:`agentws.doors.mcp.transports.legacy_sse`.
"""

from __future__ import annotations

import logging
import math
import re
from typing import Any, Protocol

import attrs
import mcp_types as types
import trio

from agentws.core.errors import OverCapacityError, StoreError, UnauthorizedError, error_body
from agentws.core.logs import add_log_context
from agentws.core.metrics import REJECTED
from agentws.doors.mcp.dispatch.modern import (
    StatelessBody,
    is_stateless,
    pending_owner,
    serve_stateless,
)
from agentws.doors.mcp.sessions.auth import Authenticator
from agentws.doors.mcp.sessions.replay import Event
from agentws.doors.mcp.sessions.supervisor import McpSession, SessionSupervisor, Transport
from agentws.doors.mcp.transports.batches import answer_batch
from agentws.doors.mcp.transports.cors import Cors, answer_preflight, with_cors
from agentws.doors.mcp.transports.door_requests import (
    SESSION_HEADER,
    Answered,
    Batch,
    DoorRequest,
    check_accept,
    check_content_type,
    parse_message,
    read_body,
    refuse_unknown_version,
    rpc_error,
    submit,
    submit_request,
)
from agentws.doors.mcp.transports.forward import (
    SessionForwarder,
    owner_of,
)
from agentws.doors.mcp.transports.guard import HostOriginGuard
from agentws.doors.mcp.transports.legacy_sse import (
    check_legacy_accept,
    legacy_session_id,
    serve_legacy_post,
    serve_legacy_stream,
)
from agentws.doors.mcp.transports.owner_forward import forward_to_owner, store_unavailable
from agentws.doors.mcp.transports.scope_challenge import ScopeChallenge, check_scope
from agentws.doors.mcp.transports.streams import primes, priming_for, stream_events, write_sse
from agentws.http.asgi import (
    ASGIApp,
    BodyReader,
    HttpRefusal,
    Receive,
    Scope,
    Send,
    base_url_of,
    respond,
    respond_json,
)
from agentws.oauth.resources import bearer_challenge
from agentws.settings.config import Settings

__all__ = ["GuardVerdicts", "McpDoor"]

log = logging.getLogger("agentws.mcp")

_PATH = re.compile(r"/mcp/g/([a-z0-9][a-z0-9-]*)/([a-z0-9][a-z0-9-]*)(/messages)?/?")
_NO_SESSION = "no such session (it may have expired): initialize again"
# The one revision with JSON-RPC batches (2025-06-18 removed them).
_BATCHES_IN = "2025-03-26"
# Host/Origin/address triples whose verdict is remembered; more are forgotten all at
# once (a client sends the same triple with every request; a flood of made-up Host
# headers costs what it would without the memory).
_MAX_VERDICTS = 256


class _Guard(Protocol):
    def refusal(
        self, host: str | None, origin: str | None, server: object = None
    ) -> str | None: ...


@attrs.define(eq=False)
class GuardVerdicts:
    """The Host/Origin guard's verdicts, each asked of it once per (Host, Origin, address).

    The guard is a pure function of these three (and of settings that do
    not change while the process runs); its answer takes parsing an address
    and matching every pattern, which every request of a client would repeat.
    """

    guard: _Guard
    most: int = _MAX_VERDICTS
    _verdicts: dict[tuple[str | None, str | None, object], str | None] = attrs.field(
        factory=dict, init=False
    )

    def __len__(self) -> int:
        return len(self._verdicts)

    def refusal(self, host: str | None, origin: str | None, server: object = None) -> str | None:
        """What :meth:`HostOriginGuard.refusal` says for these, asked once."""
        if isinstance(server, list):
            server = tuple(server)  # ASGI says a tuple; some servers give a list
        key = (host, origin, server)
        try:
            return self._verdicts[key]
        except KeyError:
            pass
        except TypeError:  # an address that cannot be a key: asked every time
            return self.guard.refusal(host, origin, server)
        verdict = self.guard.refusal(host, origin, server)
        if len(self._verdicts) >= self.most:
            self._verdicts.clear()
        self._verdicts[key] = verdict
        return verdict


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
    #: Answers an OAuth call beyond its token's scope with a 403 challenge.
    scopes: ScopeChallenge | None = None
    guard: GuardVerdicts = attrs.field(init=False)
    cors: Cors = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.guard = GuardVerdicts(HostOriginGuard.from_settings(self.settings))
        self.cors = Cors.from_settings(self.settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/mcp/"):
            await self.app(scope, receive, send)
            return
        origin = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"origin"), None)
        if origin is not None and self.cors.grants(origin):
            send = with_cors(send, self.cors.response_headers(origin))
        # Many answers (a refusal, a wrong version) come before the body is
        # read: each must drop the rest of it as it goes, or a large upload stalls.
        body = BodyReader(receive, self.settings.body_read_timeout_s)
        send = body.answering(scope, send)
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
            request = DoorRequest(
                scope, receive, tracked_send, match[1], match[2], bool(match[3]), body
            )
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

    async def _handle(self, request: DoorRequest) -> None:
        refusal = self.guard.refusal(
            request.header(b"host"), request.header(b"origin"), request.scope.get("server")
        )
        if refusal is not None:
            log.warning("refused MCP request: %s", refusal)
            raise HttpRefusal(403, "forbidden", refusal)
        if request.method == "OPTIONS":
            await answer_preflight(self.cors, request)
            return
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
            challenge = bearer_challenge(
                base_url_of(self.settings, request.scope),
                request.workspace,
                request.group,
                exc.message if request.header(b"authorization") else None,
            )
            raise HttpRefusal(
                401, "unauthorized", exc.message, [("WWW-Authenticate", challenge)]
            ) from None
        except StoreError as exc:
            raise store_unavailable("authenticate an MCP request", exc) from None
        if not request.messages_path and (
            request.method == "POST" or request.header(SESSION_HEADER.encode()) is not None
        ):
            check_accept(request)

        session_id = request.session_id
        if not request.messages_path and is_stateless(request.scope, session_id):
            await self._stateless(request, sessions, forwarder)
            return
        if session_id is not None and sessions.get(session_id) is None:
            owner_id = owner_of(session_id)
            if owner_id is not None and owner_id != self.settings.instance_id:
                await self._forward(request, forwarder, owner_id)
                return
        with_session = request.header(SESSION_HEADER.encode()) is not None
        if not request.messages_path and with_session and await self._wrong_version(request):
            return

        if request.messages_path:
            session = self._session(request, sessions, legacy_session_id(request), "sse")
            await serve_legacy_post(request, session, self.settings)
        elif request.method == "GET":
            if request.header(SESSION_HEADER.encode()) is None:
                check_legacy_accept(request)
                session = await self._open(request, sessions, "sse")
                await serve_legacy_stream(request, session, self.settings)
            else:
                await self._standalone_stream(request, sessions)
        elif request.method == "POST":
            await self._post(request, sessions)
        else:
            await self._delete(request, sessions)

    # --- sessions --------------------------------------------------------------------

    def _session(
        self, request: DoorRequest, sessions: SessionSupervisor, session_id: str, transport: str
    ) -> McpSession:
        session = sessions.get(session_id)
        caller = request.caller
        # Another token's session answers exactly like a session that does not exist.
        if (
            session is None
            or caller is None
            or session.token_id != caller.token_id
            or session.transport != transport
        ):
            raise HttpRefusal(404, "session_not_found", _NO_SESSION)
        return session

    async def _open(
        self, request: DoorRequest, sessions: SessionSupervisor, transport: Transport
    ) -> McpSession:
        try:
            return await sessions.open(request.authorized, transport)
        except OverCapacityError as exc:
            raise HttpRefusal(
                503, exc.code, exc.message, [("Retry-After", str(exc.retry_after_s))]
            ) from None

    async def _forward(
        self, request: DoorRequest, forwarder: SessionForwarder, owner_id: str
    ) -> None:
        """Relay a request for another instance's session to that instance."""

        async def body() -> bytes:
            return await read_body(request, self.settings) if request.method == "POST" else b""

        await forward_to_owner(
            request,
            forwarder,
            owner_id,
            body,
            missing=HttpRefusal(404, "session_not_found", _NO_SESSION),
            gone=HttpRefusal(
                404,
                "session_not_found",
                "no such session: the instance that held it is gone; initialize again",
            ),
        )

    async def _stateless(
        self, request: DoorRequest, sessions: SessionSupervisor, forwarder: SessionForwarder
    ) -> None:
        """A stateless (2026-07-28) request; a call's next round goes where the call waits."""
        raw = b""
        if request.method == "POST":
            check_content_type(request)
            raw = await read_body(request, self.settings)
        # Parsed once, by the first that reads it (it may be a large call).
        body = StatelessBody(raw)
        await check_scope(
            self.scopes, request, lambda: body.document() if b"tools/call" in raw else None
        )
        owner_id = pending_owner(body)
        if owner_id is not None and owner_id != self.settings.instance_id:
            ended = HttpRefusal(
                404,
                "call_not_found",
                "the call this requestState continues has ended: call the tool again",
            )

            # Read already: the requestState in it names the owner.
            async def read() -> bytes:
                return raw

            await forward_to_owner(request, forwarder, owner_id, read, missing=ended, gone=ended)
            return
        await serve_stateless(
            sessions.server, request.authorized, body, request.scope, request.receive, request.send
        )

    # --- Streamable HTTP ------------------------------------------------------------------

    async def _post(self, request: DoorRequest, sessions: SessionSupervisor) -> None:
        session_id = request.header(SESSION_HEADER.encode())
        try:
            message = await parse_message(
                request, self.settings, session_id, batches=self._takes_batches(session_id)
            )
        except Answered:
            return
        except Batch as batch:
            session = self._session(request, sessions, session_id or "", "streamable")
            await answer_batch(request, session, batch.messages, self.settings)
            return
        is_request = isinstance(message, types.JSONRPCRequest)
        if isinstance(message, types.JSONRPCRequest):
            call = {"method": message.method, "params": message.params}
            await check_scope(self.scopes, request, lambda: call)
        if session_id is None:
            if not (is_request and message.method == "initialize"):  # type: ignore[union-attr]
                raise HttpRefusal(
                    400, "missing_session", "no Mcp-Session-Id header: send initialize first"
                )
            session = await self._open(request, sessions, "streamable")
        else:
            session = self._session(request, sessions, session_id, "streamable")
        if not is_request:
            await submit(session, message)
            await respond(request.send, 202, b"", [(b"mcp-session-id", session.id.encode())])
            return
        await self._answer(request, session, message)  # type: ignore[arg-type]

    def _takes_batches(self, session_id: str | None) -> bool:
        session = self.sessions.get(session_id) if session_id else None
        return session is not None and session.protocol_version == _BATCHES_IN

    async def _wrong_version(self, request: DoorRequest) -> bool:
        session = self.sessions.get(request.header(SESSION_HEADER.encode()) or "")
        caller = request.caller
        if session is None or caller is None:
            return False  # no such session for this caller: the 404 says so
        if session.token_id != caller.token_id:
            # An OAuth client's refreshed (or wider) token carries on its session.
            if not await self.auth.continues(caller, session.caller):
                return False
            self.sessions.adopt(session, caller)
        return await refuse_unknown_version(request, session)

    async def _answer(
        self, request: DoorRequest, session: McpSession, message: types.JSONRPCRequest
    ) -> None:
        request_id = str(message.id)
        connection = await submit_request(request, session, message)
        if connection is None:
            return
        replies = connection.receive
        try:
            first: list[Event] = []
            with trio.move_on_after(self.settings.sse_keepalive_s):
                try:
                    first.append(await replies.receive())
                except trio.EndOfChannel:
                    await rpc_error(
                        request,
                        404,
                        message.id,
                        types.CONNECTION_CLOSED,
                        "the session has ended",
                        session.id,
                    )
                    return
            if first and first[0][2]:
                session.forget(request_id, connection.stream)
                headers = [
                    (b"content-type", b"application/json"),
                    (b"mcp-session-id", session.id.encode()),
                ]
                await respond(request.send, 200, first[0][1].encode(), headers)
                return
            # Something came before the response, or it is slow: stream the rest.
            close_at = math.inf
            if self.settings.mcp_sse_poll_s and primes(session):
                close_at = trio.current_time() + self.settings.mcp_sse_poll_s
            written = await write_sse(
                request,
                session,
                stream_events(first, replies, close_at=close_at),
                self.settings,
                prelude=priming_for(session, connection.stream.event_id(0)),
            )
            if written and connection.stream.finished:
                # The client has the response: nothing to resume.
                session.replays.discard(connection.stream)
        finally:
            # Unanswered, the request goes on: its replies wait for a resume.
            session.leave(connection)

    async def _standalone_stream(self, request: DoorRequest, sessions: SessionSupervisor) -> None:
        session = self._session(
            request, sessions, request.header(SESSION_HEADER.encode()) or "", "streamable"
        )
        last_event_id = request.header(b"last-event-id")
        if last_event_id:
            await self._resume(request, session, last_event_id)
            return
        connection = session.open_stream()
        if connection is None:
            raise HttpRefusal(409, "conflict", "this session already has an open stream")
        start = connection.stream.event_id(connection.stream.seq)
        try:
            await write_sse(
                request,
                session,
                stream_events((), connection.receive),
                self.settings,
                prelude=priming_for(session, start),
            )
        finally:
            session.leave(connection)
        await session.teardown_turn()

    async def _resume(self, request: DoorRequest, session: McpSession, last_event_id: str) -> None:
        """Send what the stream of ``last_event_id`` had after it, then its live events."""
        resumed = session.resume(last_event_id)
        if resumed is None:
            raise HttpRefusal(
                404,
                "event_not_found",
                f"this session has no event {last_event_id!r} to resume after (events are "
                "kept AGENTWS_MCP_REPLAY_S); open the stream without Last-Event-ID",
            )
        missed, connection = resumed
        try:
            await write_sse(
                request,
                session,
                stream_events(missed, connection.receive if connection else None),
                self.settings,
                prelude=priming_for(session, last_event_id),
            )
        finally:
            if connection is not None:
                session.leave(connection)
        await session.teardown_turn()

    async def _delete(self, request: DoorRequest, sessions: SessionSupervisor) -> None:
        session_id = request.header(SESSION_HEADER.encode())
        if session_id is None:
            raise HttpRefusal(400, "missing_session", "DELETE needs the Mcp-Session-Id header")
        session = self._session(request, sessions, session_id, "streamable")
        session.close()
        await respond(request.send, 204, b"", [(b"mcp-session-id", session.id.encode())])
