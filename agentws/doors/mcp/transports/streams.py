"""Writing MCP's SSE streams: a request's replies, a session's stream, the legacy stream.

Both transports stream the same way (:func:`write_sse`): events come from
an :data:`EventSource` (:func:`stream_events`); on Streamable HTTP each
carries its id (:mod:`agentws.doors.mcp.sessions.replay`) and, for clients of 2025-11-25
and later, the stream opens with a priming event; a keep-alive comment goes
out when none arrives within the keep-alive interval (but on the streams of a
session that a mass close has taken, to end it soon); a client that reads nothing for
``sse_stall_s`` has its session closed; the client's disconnect ends the
stream. On an HTTP/1.1 connection served through the Hypercorn bridge the
connection tells the stream of its end (:mod:`agentws.bridges.hangups`);
elsewhere a task beside the writer reads ``http.disconnect``, in a nursery
of :func:`write_sse`'s own, not in a generator.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import trio

from agentws.bridges import hangups
from agentws.doors.mcp.sessions.replay import Event
from agentws.doors.mcp.sessions.session import McpSession
from agentws.doors.mcp.transports.forward import cancel_on_disconnect

if TYPE_CHECKING:
    from agentws.doors.mcp.transports.door_requests import DoorRequest
    from agentws.settings.config import Settings

__all__ = [
    "RETRY_MS",
    "EventSource",
    "primes",
    "priming_event",
    "priming_for",
    "stream_events",
    "write_sse",
]

log = logging.getLogger("agentws.mcp")

#: ``next_event() -> (chunk, last)``: the next SSE event and whether it is the
#: stream's last; ``(None, True)`` once there are no more.
EventSource = Callable[[], Awaitable[tuple[bytes | None, bool]]]

_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    # nginx would otherwise buffer the stream and deliver nothing until it ends.
    (b"x-accel-buffering", b"no"),
]
_PING = b": ping\n\n"
#: The ``retry`` a priming event asks of a client before it reconnects: the
#: SDK clients' own default, quick enough for SSE polling.
RETRY_MS = 1000
# The first revision whose clients expect a priming event and resume a POST's stream.
_PRIMING_SINCE = "2025-11-25"


async def write_sse(
    request: DoorRequest,
    session: McpSession,
    events: EventSource,
    settings: Settings,
    *,
    prelude: Iterable[bytes] = (),
) -> bool:
    """Write an SSE response from ``events`` until it ends, the client leaves, or stalls.

    Args:
        request: the door's request; its ``receive`` is watched for the
            client's disconnect, which ends the stream.
        session: the MCP session the stream is of (closed if its client stalls).
        events: returns ``(chunk, last)``; a None chunk means nothing
            arrived within ``sse_keepalive_s`` (a comment line is sent).
        settings: ``sse_keepalive_s``, the longest silence before a
            keep-alive comment; ``sse_stall_s``, how long a write may wait
            on a client that reads nothing.
        prelude: events sent first (a priming event, the legacy ``endpoint`` event).

    Returns:
        Whether the response ended as ``events`` did (not cut short).
    """
    send, keepalive_s, stall_s = request.send, settings.sse_keepalive_s, settings.sse_stall_s
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [*_SSE_HEADERS, (b"mcp-session-id", session.id.encode())],
        }
    )
    pending = list(prelude)
    completed = False
    async with _until_disconnect(request):
        while True:
            chunk: bytes | None
            if pending:
                chunk, last = pending.pop(0), False
            else:
                chunk, last = _PING, False
                with trio.move_on_after(math.inf if session.closing else keepalive_s):
                    chunk, last = await events()
                if chunk is None:
                    completed = True
                    break
                if chunk is _PING and session.closing:
                    continue  # a mass close ends the stream soon
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
    if completed:
        _hold_close(request, session)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    return completed


def _hold_close(request: DoorRequest, session: McpSession) -> None:
    """Have the connection, if the client hangs up on reading this end, close with the
    response: for a session of a mass close, once its turn to unwind has come
    (:mod:`agentws.doors.mcp.sessions.teardowns`)."""
    hold = session.teardown_hold
    if hold is None:
        return
    hang_up = hangups.current(request.scope)
    if hang_up is not None:
        hang_up.hold_close(hold.wait)


@asynccontextmanager
async def _until_disconnect(request: DoorRequest) -> AsyncIterator[None]:
    """A block the client's disconnect cancels; the watch ends with the block."""
    hang_up = hangups.current(request.scope)
    if hang_up is not None:  # the connection tells: no task of our own, nothing to cancel
        with trio.CancelScope() as scope, hang_up.cancelling(scope):
            yield
        return
    async with trio.open_nursery() as nursery:
        nursery.start_soon(cancel_on_disconnect, request.receive, nursery.cancel_scope)
        yield
        nursery.cancel_scope.cancel()  # the watcher's task


def _event(event_id: str | None, data: str) -> bytes:
    if event_id is None:
        return f"event: message\ndata: {data}\n\n".encode()
    return f"id: {event_id}\nevent: message\ndata: {data}\n\n".encode()


def priming_event(event_id: str) -> bytes:
    """2025-11-25's priming event: an id to resume from and empty data, with ``retry``."""
    return f"id: {event_id}\nretry: {RETRY_MS}\ndata: \n\n".encode()


def primes(session: McpSession) -> bool:
    """Whether the session's client expects priming events (2025-11-25 and later)."""
    return session.protocol_version is not None and session.protocol_version >= _PRIMING_SINCE


def priming_for(session: McpSession, event_id: str) -> tuple[bytes, ...]:
    """The priming event a stream of ``session`` starts with, if its client expects one."""
    return (priming_event(event_id),) if primes(session) else ()


def stream_events(
    first: Iterable[Event],
    live: trio.MemoryReceiveChannel[Event] | None,
    *,
    ids: bool = True,
    close_at: float = math.inf,
    until_closed: bool = False,
) -> EventSource:
    """``first``, then ``live``'s events, until one ends the stream (a request's response).

    Args:
        first: events to send before the live ones (replayed, or read already).
        live: the stream's live events; None when ``first`` is all there is.
        ids: whether events carry their id (not on the legacy transport).
        close_at: when to end the stream although it has not ended (SSE
            polling: the client resumes it with ``GET`` and ``Last-Event-ID``).
        until_closed: end only when ``live`` closes, whatever the events say
            (a batch's answer: several requests' streams in one).
    """
    pending = list(first)

    async def next_event() -> tuple[bytes | None, bool]:
        if pending:
            event_id, data, last = pending.pop(0)
        elif live is None:
            return None, True
        else:
            try:
                if close_at == math.inf:
                    # A session's stream waits anew at every keep-alive: no
                    # cancel scope made for a deadline it does not have.
                    event_id, data, last = await live.receive()
                else:
                    with trio.move_on_at(close_at) as polled:
                        event_id, data, last = await live.receive()
                    if polled.cancelled_caught:
                        return None, True
            except (trio.EndOfChannel, trio.ClosedResourceError):
                return None, True
        return _event(event_id if ids else None, data), last and not until_closed

    return next_event
