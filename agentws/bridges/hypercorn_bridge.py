"""Every class of Hypercorn that agentws replaces, and the one switch that installs them.

Hypercorn's trio worker takes its HTTP/1.1 protocol class from
``hypercorn.protocol.H11Protocol`` and its connection class from
``hypercorn.trio.run.TCPServer``; :func:`install` points both at the classes
below, for the whole process. Each works around a behaviour of Hypercorn
0.18 (trio):

- **A hang-up can stop the server** (no upstream issue names this race;
  the nearest report is pgjones/hypercorn#203, "H11 Got data when expected
  EOF", a trio worker that dies on a security scanner's requests).
  ``TCPServer`` ends a connection (``send_eof``) without taking the lock
  its sends take. When a client cuts a request body short and hangs up,
  Hypercorn's own 400 and the connection's close can meet on one socket:
  ``send_all`` raises ``trio.BusyResourceError``, which its handler does not
  expect, and the error ends the whole server. Any client could stop the
  service this way, without a token. :class:`BridgedTCPServer` takes that
  error for what it means (the connection is closing) and lets the
  connection end alone.
- **HTTP/1.1 parsed in Python, three writes per response** (no upstream
  issue; Hypercorn's behaviour: it speaks HTTP/1.1 with ``h11`` only).
  Reading a request and writing its answer with ``h11`` costs about 70 µs a
  request, which llhttp does in under 5: ``h11`` took 9% of the event loop's
  time on a proxied call (``scripts/bench gateway``, py-spy). And
  ``H11Protocol`` writes a response's head, its body and the end of the
  message as separate socket writes, each under the connection's send lock
  in a shielded cancel scope. :class:`HttpToolsProtocol` reads requests with
  ``httptools`` and frames answers as ``h11`` does
  (:mod:`agentws.bridges.http11_server_wire`), with Hypercorn's streams,
  events, refusals (400, 431, 501, each closing the connection) and switches
  to HTTP/2 (``h2c``, prior knowledge). It holds back the head of a response
  that gives its ``Content-Length`` (its body follows at once) and writes it
  with the first piece of body, or with the end of the message; nothing is
  written for an empty piece. The head of any other response (an SSE stream,
  whose first event may be long in coming) is written at once. WebSocket is
  not served (agentws has no WebSocket route): an ``Upgrade: websocket``
  request is answered as HTTP/1.1, and its connection closed. A write
  finding the connection's send lock free takes it without a turn of the
  loop (Hypercorn's ``async with`` gives one before each write), and writes
  what the kernel takes at once without the turn ``send_all`` gives after
  it (:mod:`agentws.bridges.socket_writes`).
- **A timer task per request** (no upstream issue; Hypercorn's behaviour).
  ``TCPServer`` stops its keep-alive timer when a request arrives and
  starts it again when the response is done: a task cancelled and a new
  one started, per request. :class:`BridgedTCPServer` keeps one timer task
  for the connection's life: falling idle sets its deadline, a request
  clears it. The timeout and the graceful close at shutdown are
  Hypercorn's: an idle connection is closed ``keep_alive_timeout`` after
  its last response, or at once when the server shuts down; a busy one
  when its response is done. The client's hang-up only disarms the timer;
  its task ends as the connection closes, so that a close held back (below)
  takes that cost with it, out of the way of the streams still ending.
- **A task per streaming response to notice the client leave** (no
  upstream issue; the ASGI way). A response learns of a hang-up by reading
  ``http.disconnect``, which needs a task beside a response that writes.
  On HTTP/1.1 that message comes only when the connection's read loop ends,
  so :class:`BridgedTCPServer` tells its responses then, through
  :mod:`agentws.bridges.hangups`.
- **A connection closes as soon as its client hangs up** (no upstream
  issue; Hypercorn's behaviour). When ten thousand MCP streams end at once
  (a token revoked), their clients hang up as they read the ends, and each
  close costs the event loop about what a stream's end does: closed at
  once, they put off the streams still to end by as much. A response about
  to end may ask its connection to wait before closing
  (:meth:`agentws.bridges.hangups.HangUp.hold_close`), and
  :class:`BridgedTCPServer` does, when the input ends, before Hypercorn
  handles that end.

:class:`BridgedTCPServer` overrides Hypercorn's private
``TCPServer._read_data`` (the connection's read loop, copied from 0.18 but
for what happens when the input ends) to disarm the keep-alive timer, to wait
as a response asked, and to tell the responses when the client's side ends.

The replacements lean on Hypercorn's internals (``_read_data``,
``_initiate_server_close``, ``_task_group``, ``_idle_timeout``, ``send_lock``, the
``idle_task`` protocol, ``H11Protocol``'s attributes and ``_close_stream``,
``HTTPStream``, the HTTP/2 switch's exceptions), so :func:`install` puts them in place only on a
release in :data:`TESTED_VERSIONS`; on any other it logs a warning naming
the version and the service runs on stock Hypercorn. HTTP/2 is untouched.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any, cast

import h11
import hypercorn.protocol
import hypercorn.trio.run
import trio
from hypercorn.config import Config
from hypercorn.events import Closed, RawData, Updated
from hypercorn.protocol.events import Body, EndBody, Request, Response, StreamClosed
from hypercorn.protocol.h11 import (
    STREAM_ID,
    H2CProtocolRequiredError,
    H2ProtocolAssumedError,
    H11Protocol,
)
from hypercorn.protocol.http_stream import HTTPStream
from hypercorn.trio.tcp_server import TCPServer

from agentws.bridges.answer_headers import answer_headers
from agentws.bridges.hangups import watch_connection
from agentws.bridges.http11_server_wire import (
    H2_PREFACE,
    AnswerFraming,
    BodyPiece,
    FramingError,
    MessageEnd,
    RequestHead,
    RequestReader,
    informational,
)
from agentws.bridges.socket_reads import receive_when_ready
from agentws.bridges.socket_writes import write_now

__all__ = [
    "TESTED_VERSIONS",
    "BridgedTCPServer",
    "HttpToolsProtocol",
    "install",
    "installed_version",
]

log = logging.getLogger("agentws.server")

# What the connection's read loop reads at most at once (as Hypercorn 0.18's).
_MAX_RECV = 2**16

#: Hypercorn releases the replacements were tested with (tests/unit/test_hypercorn_bridge.py,
#: the e2e suites). Adding one is the upgrade checklist in docs/architecture.md.
TESTED_VERSIONS = frozenset({"0.18.0"})


def installed_version() -> str:
    """The Hypercorn release installed in this environment."""
    return importlib.metadata.version("hypercorn")


class HttpToolsProtocol(H11Protocol):
    """HTTP/1.1 read by httptools and written by :mod:`agentws.bridges.http11_server_wire`.

    Hypercorn's ``H11Protocol`` but for its wire: the same streams, the same
    events to the connection (``Updated`` as it falls idle or busy,
    ``Closed`` to close), the same answers to what cannot be read, the same
    switches to HTTP/2 (``h2c`` or prior knowledge). A response that gives
    its ``Content-Length`` has its head written with its first piece of
    body (or its end), in one write.
    """

    def __init__(
        self,
        app: Any,
        config: Config,
        context: Any,
        task_group: Any,
        connection_state: Any,
        ssl: bool,
        client: tuple[str, int] | None,
        server: tuple[str, int] | None,
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        # H11Protocol's attributes but its h11 connection, which is not used here
        # (a connection holds this object for its life: ten thousand may be open).
        self.app = app
        self.can_read = context.event_class()
        self.client = client
        self.config = config
        self.context = context
        self.keep_alive_requests = 0
        self.send = send
        self.server = server
        self.ssl = ssl
        self.stream = None
        self.task_group = task_group
        self.connection_state = connection_state
        self._reader = RequestReader(max_head_bytes=self.config.h11_max_incomplete_size)
        self._request: RequestHead | None = None
        self._framing: AnswerFraming | None = None
        self._held_head: bytes | None = None
        self._request_done = False
        self._answer_started = False
        self._answer_done = False
        self._closing = False
        # The connection's first bytes, until they cannot be HTTP/2's preface.
        self._first: bytes | None = b""

    async def handle(self, event: Any) -> None:
        if isinstance(event, RawData):
            data = event.data
            if self._first is not None and data:
                # HTTP/2 with prior knowledge: Hypercorn switches protocol on its preface.
                data = self._first + data
                if H2_PREFACE.startswith(data[: len(H2_PREFACE)]):
                    if len(data) < len(H2_PREFACE):
                        self._first = data
                        return
                    raise H2ProtocolAssumedError(data)
                self._first = None
            if data:
                self._reader.feed(data)
            else:
                self._reader.feed_eof()
            await self._handle_events()
        elif isinstance(event, Closed) and self.stream is not None:
            await self._close_stream()

    async def _handle_events(self) -> None:
        while (event := self._reader.next_event()) is not None:
            if isinstance(event, BodyPiece):
                if self.stream is not None:
                    await self.stream.handle(Body(stream_id=STREAM_ID, data=event.data))
            elif isinstance(event, MessageEnd):
                self._request_done = True
                if self.stream is not None:
                    await self.stream.handle(EndBody(stream_id=STREAM_ID))
            elif isinstance(event, RequestHead):
                if not await self._answered_before():
                    return
                await self._start(event)
            else:
                if event.in_head and not await self._answered_before():
                    return
                if not self._answer_started:
                    await self._send_error_response(event.status)
                await self.send(Closed())
                return

    async def _answered_before(self) -> bool:
        """Wait until the request before is answered (as h11's ``PAUSED``); False if the
        connection closes instead."""
        while self._request is not None:
            await self.can_read.clear()
            await self.can_read.wait()
            if self._closing:
                return False
        return True

    async def _start(self, request: RequestHead) -> None:
        self._request = request
        self._framing = AnswerFraming(request)
        self._request_done = self._answer_started = self._answer_done = False
        await self.send(Updated(idle=False))
        if request.upgrade == b"h2c" and not _has_body(request):
            # As Hypercorn: switch to HTTP/2 when asked, unless a body is on its way.
            await self._write(informational(101, [*answer_headers(self.config), *_H2C]))
            raise H2CProtocolRequiredError(request.trailing, _h11_request(request))
        self.stream = HTTPStream(
            self.app,
            self.config,
            self.context,
            self.task_group,
            self.ssl,
            self.client,
            self.server,
            self.stream_send,
            STREAM_ID,
        )
        await self.stream.handle(
            Request(
                stream_id=STREAM_ID,
                headers=request.headers,
                http_version=request.http_version,
                method=request.method.decode("ascii").upper(),
                raw_path=request.target,
                state=self.connection_state,
            )
        )
        self.keep_alive_requests += 1
        await self.context.mark_request()
        if request.expects_continue:
            await self._write(informational(100, answer_headers(self.config)))

    async def stream_send(self, event: Any) -> None:
        if isinstance(event, StreamClosed):
            await self._write(b"")  # a head held for a body that never came goes alone
            await self._maybe_recycle()
            return
        framing = self._framing
        if framing is None:
            return  # the request was answered already (it could not be read)
        try:
            if isinstance(event, Response):
                headers = [*event.headers, *answer_headers(self.config)]
                if event.status_code < 200:
                    await self._write(informational(event.status_code, headers))
                    return
                if self.keep_alive_requests >= self.config.keep_alive_max_requests:
                    headers.append((b"connection", b"close"))
                head = framing.head(event.status_code, headers)
                self._answer_started = True
                if framing.gives_length:
                    self._held_head = head  # its body follows at once
                else:
                    await self._write(head)
            elif isinstance(event, Body):
                await self._write(framing.piece(event.data))
            elif isinstance(event, EndBody):
                await self._write(framing.end())
                self._answer_done = True
        except FramingError:
            # As Hypercorn: nothing to answer once the client broke the protocol.
            if not self._reader.failed:
                raise

    async def _write(self, data: bytes) -> None:
        head, self._held_head = self._held_head, None
        if head is not None:
            data = head + data
        if data:
            await self.send(RawData(data=data))

    async def _send_error_response(self, status_code: int) -> None:
        # Framed for no request: no body, and the connection closes after it.
        headers = [(b"content-length", b"0"), *answer_headers(self.config)]
        await self._write(AnswerFraming(None).head(status_code, headers))
        self._answer_started = True
        self._framing = None

    async def _maybe_recycle(self) -> None:
        await self._close_stream()
        framing = self._framing
        keep = (
            framing is not None
            and framing.keep_alive
            and self._answer_done
            and self._request_done
            and not self.context.terminated.is_set()
        )
        self._request = self._framing = None
        self._answer_started = False
        if keep:
            await self.can_read.set()
            await self.send(Updated(idle=True))
        else:
            self._closing = True
            await self.can_read.set()
            await self.send(Closed())


_H2C = [(b"connection", b"upgrade"), (b"upgrade", b"h2c")]


def _has_body(request: RequestHead) -> bool:
    return any(name in (b"content-length", b"transfer-encoding") for name, _ in request.headers)


def _h11_request(request: RequestHead) -> h11.Request:
    """``request`` as the ``h11`` event Hypercorn's switch to HTTP/2 reads."""
    return h11.Request(
        method=request.method,
        target=request.target,
        headers=request.headers,
        http_version=request.http_version.encode(),
    )


class _KeepAliveTimer:
    """One connection's keep-alive timer: one task, whose deadline moves.

    Stands in for Hypercorn's ``TrioSingleTask`` as ``TCPServer.idle_task``:
    ``restart`` means the connection fell idle, ``stop`` that a request came.
    """

    def __init__(self, server: BridgedTCPServer) -> None:
        self._server = server
        self._scope: trio.CancelScope | None = None
        self._idle = False
        self._went_idle: trio.Event | None = None
        self._ended = False

    async def restart(self, task_group: Any, action: Any) -> None:
        if self._ended:
            return  # the connection closes when its input's end is handled, not for idling
        self._idle = True
        deadline = trio.current_time() + self._server.config.keep_alive_timeout
        if self._scope is None:
            self._scope = trio.CancelScope(deadline=deadline)
            task_group.spawn(self._watch, self._scope)
        else:
            self._scope.deadline = deadline
        if self._went_idle is not None:
            self._went_idle.set()

    async def stop(self) -> None:
        self._idle = False
        if self._scope is not None:
            self._scope.deadline = math.inf

    def disarm(self) -> None:
        """The client's side of the connection ended: the timer never fires again.

        Its task goes on waiting, untimed, until :meth:`end`: a mass close
        holds the connection's close until every stream has ended, and the
        task's cancellation is part of that close, not of the streams' ends.
        """
        self._ended = True
        if self._scope is not None:
            self._scope.deadline = math.inf

    def end(self) -> None:
        """The connection is closing: the timer's task ends."""
        self._ended = True
        if self._scope is not None:
            self._scope.cancel()

    async def _watch(self, scope: trio.CancelScope) -> None:
        with scope:
            await self._server.context.terminated.wait()
            # Shutting down while a request is served: close once it is answered.
            while not self._idle:
                self._went_idle = trio.Event()
                await self._went_idle.wait()
        if self._ended:
            return  # the connection closes on its own
        with trio.CancelScope(shield=True):
            await self._server.close_idle()


class BridgedTCPServer(TCPServer):
    """Hypercorn's trio connection: one keep-alive timer task, and a hang-up that ends
    only its own connection (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Hypercorn's run() starts it when the connection opens, by this name.
        self._timer = _KeepAliveTimer(self)
        self.idle_task = cast(Any, self._timer)

    async def protocol_send(self, event: Any) -> None:
        if isinstance(event, Updated):
            if event.idle:
                await self._timer.restart(self._task_group, self._idle_timeout)
            else:
                await self._timer.stop()
            return
        # The stream is being closed by the other side of the race: nothing to send to.
        with contextlib.suppress(trio.BusyResourceError):
            if isinstance(event, RawData) and not self.send_lock.locked():
                await self._write_now(event.data)
            else:
                await super().protocol_send(event)

    async def _write_now(self, data: bytes) -> None:
        # Hypercorn's write, but for its free lock taken without a turn of the
        # loop, and what the kernel takes at once written without one either:
        # a write the kernel takes whole costs no pass through the scheduler.
        # Cancelled, it writes nothing, as with the lock's checkpoint.
        await trio.lowlevel.checkpoint_if_cancelled()
        self.send_lock.acquire_nowait()
        try:
            sent = write_now(self.stream, data)
            if sent < len(data):
                with trio.CancelScope(shield=True):
                    await self.stream.send_all(memoryview(data)[sent:])
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            await self.protocol.handle(Closed())
        finally:
            self.send_lock.release()

    async def run(self) -> None:
        # Set in this connection's task: each response it spawns sees it.
        self._hang_up = watch_connection()
        try:
            await super().run()
        finally:
            # The connection's objects point at each other (the protocol
            # holds this server's bound ``protocol_send``, the timer holds
            # the server): let go of here, they are freed as the connection
            # ends rather than left to the cycle collector, whose pass would
            # take seconds after ten thousand streams ended at once.
            with contextlib.suppress(AttributeError):  # a failed TLS handshake made none
                del self.protocol
            del self._timer, self.idle_task

    async def _read_data(self) -> None:
        # Hypercorn 0.18's read loop, but for what comes before its input's end is handled.
        # A new connection's first request has usually come with it: read at
        # once; later input comes after an answer, so wait for it first.
        receive: Callable[[int], Awaitable[bytes | bytearray]] = self.stream.receive_some
        when_ready = functools.partial(receive_when_ready, self.stream)
        try:
            while True:
                try:
                    with trio.fail_after(self.config.read_timeout or math.inf):
                        data = await receive(_MAX_RECV)
                except (trio.ClosedResourceError, trio.BrokenResourceError, trio.TooSlowError):
                    await self._input_ended()
                    break
                if not data:
                    await self._input_ended()
                    await self.protocol.handle(RawData(data=b""))
                    break
                await self.protocol.handle(RawData(data=bytes(data)))
                receive = when_ready
            await self.protocol.handle(Closed())
        finally:
            self._timer.end()
            # The input has ended (Hypercorn has put ``http.disconnect`` for the
            # response): a response writing a stream stops now.
            self._hang_up.happened()

    async def _input_ended(self) -> None:
        # Hypercorn's timer task is not running while a request is served,
        # so a connection whose client left mid-request ends without
        # waiting for it; this one must not wait for it either, nor close
        # the connection while a response has it wait.
        self._timer.disarm()
        await self._hang_up.input_ended()

    async def close_idle(self) -> None:
        """Close the connection, idle for too long or at shutdown (Hypercorn's way)."""
        await self._initiate_server_close()


def install(*, version: str | None = None) -> bool:
    """Have Hypercorn's trio worker serve with the classes above (idempotent).

    Args:
        version: the Hypercorn release to judge by; the installed one when None.

    Returns:
        True when the replacements are in place; False on a release not in
        :data:`TESTED_VERSIONS`, which is logged as a warning (the service
        then runs on stock Hypercorn, without the fixes).
    """
    version = installed_version() if version is None else version
    if version not in TESTED_VERSIONS:
        log.warning(
            "Hypercorn %s is not a release agentws was tested with (%s): its connection "
            "replacements are not installed and stock Hypercorn serves; see the upgrade "
            "checklist in docs/architecture.md",
            version,
            ", ".join(sorted(TESTED_VERSIONS)),
        )
        return False
    hypercorn.protocol.H11Protocol = HttpToolsProtocol  # type: ignore[attr-defined]
    hypercorn.trio.run.TCPServer = BridgedTCPServer  # type: ignore[attr-defined]
    return True
