"""One MCP session: its caller, the SDK's serving of it, and its HTTP streams.

Messages from the server to the client go through the session's router
(:meth:`McpSession.send`): a response (or a message tied to a request) goes
to that request's stream; anything else goes to the session's ``GET``
stream. Each stream keeps its recent events (:mod:`agentws.doors.mcp.sessions.replay`) and
passes them to the HTTP connection reading it, if one does; a request whose
connection is gone keeps running, and its events wait there for a client
that resumes. Every such channel is bounded: a client that does not read
for ``sse_stall_s`` has its session closed instead of making it buffer.

The sessions themselves are opened, held and closed by
:class:`~agentws.doors.mcp.sessions.supervisor.SessionSupervisor`.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Any, Literal

import anyio
import attrs
import trio
from mcp.server.session import ServerSession
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types import (
    JSONRPCError,
    JSONRPCResponse,
)

from agentws.domain.models import ApprovalOutcome
from agentws.doors.mcp.sessions.auth import Caller
from agentws.doors.mcp.sessions.dispatcher import SessionServing
from agentws.doors.mcp.sessions.log_levels import outcome_notification
from agentws.doors.mcp.sessions.rendered import RenderedResults
from agentws.doors.mcp.sessions.replay import (
    CONNECTION_BUFFER,
    Connection,
    Event,
    Replays,
    ReplayStream,
)
from agentws.doors.mcp.sessions.teardowns import TeardownHold

__all__ = ["STREAM_BUFFER", "McpSession", "Transport", "new_session_id"]

log = logging.getLogger("agentws.mcp")

Transport = Literal["sse", "streamable"]

# Messages queued for one HTTP stream before its reader counts as slow.
STREAM_BUFFER = CONNECTION_BUFFER
# Queued calls a session is told the outcome of, at most (the newest).
_MAX_AWAITING = 1000
# Sending one approval outcome to a session may take this long at most.
_NOTIFY_S = 5.0

#: Replay bounds of a session built without settings (unit tests).
_DEFAULT_REPLAY = (100, 300.0)


@attrs.define(eq=False)
class McpSession:
    """One MCP session: its caller, the SDK's serving of it, its HTTP streams."""

    id: str
    caller: Caller
    transport: Transport
    stall_s: float
    #: The SDK's dispatcher and runner for this session (set by the supervisor).
    serving: SessionServing | None = None
    #: Told once, when the session closes (the supervisor's bookkeeping).
    on_close: Callable[[McpSession], None] | None = None
    #: Told once, when the session has closed and no HTTP response reads it any
    #: more: nothing of it runs, so its objects can be reclaimed (the collector).
    on_released: Callable[[McpSession], None] | None = None
    #: Told when the session starts waiting for an approval's outcome (the supervisor's index).
    on_awaiting: Callable[[McpSession], None] | None = None
    last_active: float = attrs.field(factory=trio.current_time)
    #: The session's SSE streams (the legacy stream or the ``GET`` stream is
    #: ``standalone()``) and their recent events.
    replays: Replays = attrs.field(factory=lambda: Replays(*_DEFAULT_REPLAY))
    #: The protocol version ``initialize`` settled on (None before its response).
    protocol_version: str | None = None
    #: JSON of results sent verbatim again and again (tools/list), made once.
    rendered: RenderedResults = attrs.field(factory=RenderedResults)
    #: Requests not answered yet, by JSON-RPC id: the stream their replies go to.
    _pending: dict[str, ReplayStream] = attrs.field(factory=dict)
    _initialize_id: str | None = None
    ended: trio.Event = attrs.field(factory=trio.Event)
    _server_session: ServerSession | None = None
    #: The lowest log level the client wants (``logging/setLevel``); None: all.
    log_level: str | None = None
    #: Approval requests this session queued whose outcome it has not been told
    #: (the newest ``_MAX_AWAITING``; older ones are read with ``get_approval``).
    awaiting: dict[str, None] = attrs.field(factory=dict)
    #: Resource URIs this session subscribed to (``resources/subscribe``).
    subscriptions: set[str] = attrs.field(factory=set)
    #: HTTP responses reading one of the session's streams (handed out, not left yet).
    _readers: int = 0
    #: Where a mass close holds this session's ended responses before they unwind
    #: (:mod:`agentws.doors.mcp.sessions.teardowns`); None: nothing holds them.
    teardown_hold: TeardownHold | None = None
    #: A mass close has taken the session, to end it in its batch's turn: its
    #: streams send no more keep-alive comments until then (thousands of them
    #: would hold up the batches ending the streams, for nothing).
    closing: bool = False

    @property
    def server_session(self) -> ServerSession | None:
        """The SDK's session toward the client, for notifications outside a request."""
        return self._server_session

    @server_session.setter
    def server_session(self, handle: ServerSession | None) -> None:
        # Not kept by a handler still finishing once the session has ended:
        # the handle points back at the session (see _release).
        if not self.ended.is_set():
            self._server_session = handle

    def await_outcome(self, approval_id: str) -> None:
        """Tell this session the outcome of ``approval_id`` when there is one."""
        if len(self.awaiting) >= _MAX_AWAITING:
            del self.awaiting[next(iter(self.awaiting))]
        if not self.awaiting and self.on_awaiting is not None:
            self.on_awaiting(self)
        self.awaiting[approval_id] = None

    async def tell_outcome(self, approval: ApprovalOutcome, data: dict[str, Any]) -> bool:
        """Send a queued call's outcome as a ``notifications/message``; whether it went out."""
        self.awaiting.pop(approval.id, None)
        if self.server_session is None or self.ended.is_set():
            return False
        notification = outcome_notification(data, self.log_level)
        if notification is None:
            return False  # the client asked not to hear this level
        with trio.move_on_after(_NOTIFY_S):
            try:
                await self.server_session.send_notification(notification)
            except Exception as exc:  # the session ended while we sent
                log.debug("session %s: approval outcome not sent: %r", self.id, exc)
                return False
            return True
        return False

    @property
    def token_id(self) -> str:
        return self.caller.token_id

    @property
    def stream(self) -> trio.MemorySendChannel[Event] | None:
        """The open SSE stream's channel: the legacy stream, or the ``GET`` stream."""
        return self.replays.standalone().listener

    @property
    def busy(self) -> bool:
        """Whether a stream is open or a request is in flight (not idle)."""
        return self.stream is not None or bool(self._pending)

    def unread_requests(self) -> int:
        """Requests in flight whose stream no connection reads (the client left, or polls)."""
        return sum(1 for stream in self._pending.values() if stream.listener is None)

    def close(self) -> None:
        """End the session now; its streams finish and its requests fail (idempotent)."""
        if self.ended.is_set():
            return
        if self.serving is not None:
            self.serving.close()
        self.end()
        if self.on_close is not None:
            self.on_close(self)
        if not self._readers:
            self._release()

    def _release(self) -> None:
        # The SDK's serving of the session and the session point at each
        # other: let go of here, the session is freed by reference counting.
        serving, self.serving, self._server_session = self.serving, None, None
        if serving is not None:
            serving.release()
        callback, self.on_released = self.on_released, None
        if callback is not None:
            callback(self)

    def _reading(self, connection: Connection) -> Connection:
        """Hand ``connection`` to an HTTP response; it calls :meth:`leave` when done."""
        self._readers += 1
        return connection

    def open_stream(self) -> Connection | None:
        """Attach an SSE stream; None if the session has one already or has ended."""
        if self.stream is not None or self.ended.is_set():
            return None
        return self._reading(self.replays.standalone().connect())

    def resume(self, event_id: str) -> tuple[list[Event], Connection | None] | None:
        """Reattach the stream of ``event_id`` (see :meth:`Replays.resume`); None once ended."""
        if self.ended.is_set():
            return None
        resumed = self.replays.resume(event_id)
        if resumed is None:
            return None
        missed, connection = resumed
        return missed, None if connection is None else self._reading(connection)

    def leave(self, connection: Connection) -> None:
        """A connection reading one of the session's streams is gone (its events stay kept)."""
        connection.close()
        self.last_active = trio.current_time()
        self._readers -= 1
        if not self._readers and self.ended.is_set():
            self._release()

    async def teardown_turn(self) -> None:
        """Wait, after a stream of the session has ended, until its response may unwind.

        At once, but for a session closed by a mass close (a revocation), whose
        responses unwind only once every stream of that close has ended.
        """
        if self.teardown_hold is not None:
            await self.teardown_hold.wait()

    async def submit(self, message: SessionMessage) -> None:
        """Hand a client message to the SDK's dispatcher.

        Raises:
            anyio.ClosedResourceError: the session has ended.
        """
        self.last_active = trio.current_time()
        if self.serving is None or self.ended.is_set():
            raise anyio.ClosedResourceError("the session has ended")
        await self.serving.deliver(message)

    async def request(self, message: SessionMessage, request_id: str) -> Connection:
        """Submit a request; return the connection to its stream, where its replies arrive.

        The connection's channel yields messages tied to the request and ends
        after the response; it ends without one if the session closes first.
        Should the connection leave (:meth:`leave`) before the response, the
        request goes on and its replies wait in the stream for a resume.

        Raises:
            ValueError: a request with this id is already waiting (JSON-RPC
                ids must be unique among a session's requests in flight).
        """
        if request_id in self._pending:
            raise ValueError(f"request id {request_id} is already in flight in this session")
        stream = self.replays.open()
        connection = stream.connect()
        if self.ended.is_set():
            stream.detach()
            return self._reading(connection)
        self._pending[request_id] = stream
        if getattr(message.message, "method", None) == "initialize":
            self._initialize_id = request_id
        try:
            await self.submit(message)
        except BaseException:
            self._pending.pop(request_id, None)
            self.replays.discard(stream)
            raise
        return self._reading(connection)

    def forget(self, request_id: str, stream: ReplayStream | None = None) -> None:
        """The request was answered with JSON: its stream can never be resumed."""
        self._pending.pop(request_id, None)
        if stream is not None:
            self.replays.discard(stream)
        self.last_active = trio.current_time()

    async def send(self, item: SessionMessage) -> None:
        """Route one of the server's messages to the HTTP stream it belongs on.

        A response (or a message tied to a request) goes to that request's
        stream; anything else to the session's own stream. The SDK's
        dispatcher writes here (:mod:`agentws.doors.mcp.sessions.dispatcher`).
        """
        message = item.message
        data = (
            self.rendered.response_json(message) if isinstance(message, JSONRPCResponse) else None
        ) or message.model_dump_json(by_alias=True, exclude_unset=True)
        key: str | None = None
        final = False
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            key, final = str(message.id), True
        elif (
            isinstance(item.metadata, ServerMessageMetadata)
            and item.metadata.related_request_id is not None
        ):
            key = str(item.metadata.related_request_id)
        stream = self._pending.get(key) if key is not None else None
        if stream is not None and final:
            del self._pending[key]  # type: ignore[arg-type]
            if key == self._initialize_id:
                self._settle_version(message)
        if stream is None:
            # A response goes here only on the legacy transport: it ends nothing.
            stream, final = self.replays.standalone(), False
        # 2024-11-05 streams cannot be resumed: nothing to keep.
        event = stream.record(data, final) if self.transport == "streamable" else ("", data, final)
        if stream.listener is not None:
            await self._push(stream.listener, event)
            if final:
                stream.detach()

    def _settle_version(self, message: Any) -> None:
        self._initialize_id = None
        result = getattr(message, "result", None)
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, str):
            self.protocol_version = version

    async def _push(self, channel: trio.MemorySendChannel[Any], item: Any) -> None:
        # Mostly the reader keeps up: no deadline to set for a send that cannot wait.
        try:
            channel.send_nowait(item)
        except trio.WouldBlock:
            pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return  # that reader is gone; the message has nowhere to go
        else:
            return
        with trio.move_on_after(self.stall_s) as waited:
            try:
                await channel.send(item)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return  # that reader is gone; the message has nowhere to go
        if waited.cancelled_caught:
            log.warning(
                "session %s: client read nothing for %g s; closing it", self.id, self.stall_s
            )
            self.close()

    def end(self) -> None:
        """Close every channel of the session (called once, by :meth:`close`)."""
        self.replays.close()
        self._pending.clear()
        self.ended.set()


def new_session_id(instance_id: str) -> str:
    """``<instance>.<random>``: the owning instance can be read off the id."""
    return f"{instance_id}.{secrets.token_urlsafe(18)}"
