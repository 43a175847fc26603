"""JSON-RPC batches, which 2025-03-26 sessions take (2025-06-18 removed them).

A batch's notifications and responses go to the session in order, its
requests each get a stream of their own (:mod:`agentws.doors.mcp.sessions.replay`), as a
lone request would. With no request in it, the answer is 202. The answer is
one JSON array when each request's first reply is its response; if one
sends something else first (progress, an elicitation) or is slow, the
replies of all of them go out as one SSE stream, which ends once every
request has its response. A batch holds ``mcp_max_batch_entries`` messages
at most (the door refuses a larger one whole, before any runs).
"""

from __future__ import annotations

import mcp_types as types
import trio

from agentws.doors.mcp.sessions.replay import CONNECTION_BUFFER, Connection, Event
from agentws.doors.mcp.sessions.supervisor import McpSession
from agentws.doors.mcp.transports.door_requests import DoorRequest, submit, submit_request
from agentws.doors.mcp.transports.streams import stream_events, write_sse
from agentws.http.asgi import respond
from agentws.settings.config import Settings

__all__ = ["answer_batch"]


async def answer_batch(
    request: DoorRequest,
    session: McpSession,
    messages: list[types.JSONRPCMessage],
    settings: Settings,
) -> None:
    """Process a batch on ``session`` and answer it (202, a JSON array, or SSE)."""
    connections: list[Connection] = []
    try:
        for message in messages:
            # Other requests run between a batch's submissions: they may not
            # wait on a hundred handlers' starts in one step.
            await trio.lowlevel.checkpoint()
            if not isinstance(message, types.JSONRPCRequest):
                await submit(session, message)
                continue
            connection = await submit_request(request, session, message)
            if connection is None:
                return
            connections.append(connection)
        if not connections:
            await respond(request.send, 202, b"", [(b"mcp-session-id", session.id.encode())])
            return
        merged_send, merged = trio.open_memory_channel[Event](CONNECTION_BUFFER)
        async with trio.open_nursery() as nursery:
            for connection in connections:
                nursery.start_soon(_pump, connection, merged_send.clone())
            merged_send.close()
            await _answer(request, session, connections, merged, settings)
            nursery.cancel_scope.cancel()
    finally:
        for connection in connections:
            session.leave(connection)


async def _answer(
    request: DoorRequest,
    session: McpSession,
    connections: list[Connection],
    merged: trio.MemoryReceiveChannel[Event],
    settings: Settings,
) -> None:
    first: list[Event] = []
    with trio.move_on_after(settings.sse_keepalive_s):
        while len(first) < len(connections):
            try:
                event = await merged.receive()
            except trio.EndOfChannel:
                break
            first.append(event)
            if not event[2]:
                break
    if len(first) == len(connections) and all(last for _, _, last in first):
        # Streams answered with JSON can never be resumed.
        for connection in connections:
            session.replays.discard(connection.stream)
        body = ("[" + ",".join(data for _, data, _ in first) + "]").encode()
        headers = [(b"content-type", b"application/json"), (b"mcp-session-id", session.id.encode())]
        await respond(request.send, 200, body, headers)
        return
    # A response ends its own request's stream, not this one: it ends once
    # every request's stream has (the merged channel closes).
    await write_sse(request, session, stream_events(first, merged, until_closed=True), settings)


async def _pump(connection: Connection, merged: trio.MemorySendChannel[Event]) -> None:
    async with merged:
        async for event in connection.receive:
            await merged.send(event)
