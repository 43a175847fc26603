"""The MCP door's legacy HTTP+SSE transport (2024-11-05).

``GET /mcp/g/<workspace>/<group>`` without a session opens one and its
stream; the stream's first event, ``endpoint``, names
``…/messages?session_id=<id>``, where the client POSTs its messages. Each
POST is answered 202 at once; the responses arrive on the stream. The
session lives exactly as long as its stream, and the stream carries no event
ids (2024-11-05 has no way to resume).

The door (:mod:`agentws.doors.mcp.transports.endpoint`) authenticates the request and finds or
opens the session; this module serves the two requests of the transport.
"""

from __future__ import annotations

from agentws.doors.mcp.sessions.supervisor import McpSession
from agentws.doors.mcp.transports.door_requests import Answered, DoorRequest, parse_message, submit
from agentws.doors.mcp.transports.streams import stream_events, write_sse
from agentws.http.asgi import HttpRefusal, respond
from agentws.settings.config import Settings

__all__ = ["check_legacy_accept", "legacy_session_id", "serve_legacy_post", "serve_legacy_stream"]


def check_legacy_accept(request: DoorRequest) -> None:
    """Refuse (406) a ``GET`` that does not take an SSE stream, before a session opens."""
    if not request.accepts("text/event-stream"):
        raise HttpRefusal(
            406,
            "not_acceptable",
            "GET opens an SSE stream (Accept: text/event-stream); "
            "Streamable HTTP clients POST initialize",
        )


def legacy_session_id(request: DoorRequest) -> str:
    """The session a legacy ``POST`` names (``?session_id=``); 400 if it names none."""
    if not request.session_id:
        raise HttpRefusal(
            400,
            "missing_session",
            "POST to the URL of the stream's endpoint event (…?session_id=…)",
        )
    return request.session_id


async def serve_legacy_stream(
    request: DoorRequest, session: McpSession, settings: Settings
) -> None:
    """Stream a newly opened ``session`` to its client, then close the session.

    Error handling:
        :class:`~agentws.http.asgi.HttpRefusal` (503) if the session ended before
        its stream opened.
    """
    connection = session.open_stream()
    if connection is None:  # the session ended before its stream opened
        raise HttpRefusal(
            503, "over_capacity", "the session closed at once; retry", [("Retry-After", "1")]
        )
    root = request.scope.get("root_path", "")
    endpoint = f"{root}/mcp/g/{request.workspace}/{request.group}/messages?session_id={session.id}"
    try:
        await write_sse(
            request,
            session,
            stream_events((), connection.receive, ids=False),
            settings,
            prelude=(f"event: endpoint\ndata: {endpoint}\n\n".encode(),),
        )
    finally:
        # The legacy session lives exactly as long as its stream.
        session.leave(connection)
        session.close()
    await session.teardown_turn()


async def serve_legacy_post(request: DoorRequest, session: McpSession, settings: Settings) -> None:
    """Hand a POSTed message to ``session`` and answer 202 (its response goes on the stream)."""
    try:
        message = await parse_message(request, settings, session.id)
    except Answered:
        return
    await submit(session, message)
    await respond(
        request.send,
        202,
        b"Accepted",
        [(b"content-type", b"text/plain"), (b"mcp-session-id", session.id.encode())],
    )
