"""Bounds on what a remote MCP server's answers may hold, applied before anything parses them.

A remote decides how large its answers are, and parsing, validating and
passing on a result costs the event loop in proportion: 100,000 content
items took two seconds of it. So a link's answers are bounded where they
arrive:

- **bytes**: a JSON answer's body, and each event of an SSE stream, at most
  ``AGENTWS_TOOL_MAX_RESULT_BYTES`` (:class:`CappedTransport`, the link's
  HTTP transport). An answer over the bound is not read further: in its
  place the request it answers gets a JSON-RPC error with code
  :data:`ANSWER_REFUSED` saying so, which the SDK's session and the link's
  own calls (:mod:`agentws.connectors.direct_call`) read as the remote's
  error. Compressed answers are not asked for (their size says nothing of
  what they hold), and refused when they come anyway.
- **items**: a result's lists (a call's ``content``, a listing's tools)
  hold at most :data:`MAX_RESULT_ITEMS` entries (:func:`too_many_items`),
  checked on the message as the transport parsed it, before the session
  validates it as a result.

No I/O beyond the transport's own.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any, cast

import attrs
import httpx2
import mcp_types as types
import trio

__all__ = [
    "ANSWER_REFUSED",
    "MAX_RESULT_ITEMS",
    "AnswerTooLarge",
    "CappedTransport",
    "refused_if_too_many",
    "too_many_items",
]

#: JSON-RPC error code (implementation-defined server range) of an answer
#: agentws did not pass on; its message says why, after the connector's name.
ANSWER_REFUSED = -32090
# How long closing an answer's stream may take, also when its reader was cancelled.
_CLOSE_S = 5.0
#: Entries one list of a result may hold: a call's content items, a listing's
#: entries. Validating each costs about 20 µs of the loop.
MAX_RESULT_ITEMS = 1000
# The result lists counted, and what they are called in a refusal.
_LISTS = {
    "content": "content items",
    "contents": "resource contents",
    "messages": "prompt messages",
    "tools": "tools",
    "resources": "resources",
    "resourceTemplates": "resource templates",
    "prompts": "prompts",
}
# A JSON-RPC message as the SDK and the link write one: its id comes second.
_ID = re.compile(
    rb'\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d{1,20}|"(?:[^"\\]|\\.){0,200}")'
)
# Where an event's data starts.
_DATA = re.compile(rb"(?:^|[\r\n])data: ?")
# An SSE event ends at a blank line (line endings: CRLF, CR or LF).
_BLANK_LINE = re.compile(rb"(?>\r\n|\r|\n)(?>\r\n|\r|\n)")
# Bytes of an event searched for its message's id.
_HEAD_BYTES = 512


class AnswerTooLarge(httpx2.StreamError):
    """An answer over the bound whose request cannot be told apart: it is not read further."""


@attrs.frozen
class _Refusal:
    """What the request an answer was refused for gets instead."""

    message: str

    def error(self, request_id: bytes) -> bytes:
        error = {"code": ANSWER_REFUSED, "message": self.message}
        return b'{"jsonrpc":"2.0","id":%b,"error":%b}' % (request_id, json.dumps(error).encode())


def _too_large(limit: int) -> _Refusal:
    return _Refusal(
        f"answered with more than {limit:,} bytes (AGENTWS_TOOL_MAX_RESULT_BYTES); "
        "nothing of it was passed on"
    )


def _request_id(request: httpx2.Request) -> bytes | None:
    """The id of the JSON-RPC request ``request`` carries, as JSON; None if it has none."""
    if request.method != "POST":
        return None
    try:
        body = request.content
    except httpx2.RequestNotRead:
        return None
    found = _ID.match(body, 0, _HEAD_BYTES)
    return found[1] if found else None


def _event_id(event: bytes) -> bytes | None:
    """The id of the JSON-RPC message an SSE event's data starts with, as JSON."""
    data = _DATA.search(event, 0, _HEAD_BYTES)
    found = _ID.match(event, data.end(), data.end() + _HEAD_BYTES) if data else None
    return found[1] if found else None


@contextlib.asynccontextmanager
async def _reading(stream: httpx2.AsyncByteStream) -> AsyncIterator[AsyncIterator[bytes]]:
    """``stream``'s chunks; its iterator is closed however the reading ends."""
    pieces = stream.__aiter__()
    try:
        yield pieces
    finally:
        close = getattr(pieces, "aclose", None)
        # An async generator read to its end has closed itself (no frame
        # left): on every call's answer, a shielded scope for nothing.
        if close is not None and getattr(pieces, "ag_frame", True) is not None:
            with trio.move_on_after(_CLOSE_S, shield=True):
                await close()


@attrs.define(eq=False)
class _CappedBody(httpx2.AsyncByteStream):
    """A whole answer of at most ``limit`` bytes, else the request's error in its place."""

    inner: httpx2.AsyncByteStream
    limit: int
    request_id: bytes | None
    refusal: _Refusal

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks: list[bytes] = []
        size = 0
        async with _reading(self.inner) as pieces:
            async for chunk in pieces:
                size += len(chunk)
                if size > self.limit:
                    break
                chunks.append(chunk)
        if size > self.limit:
            if self.request_id is None:
                raise AnswerTooLarge(self.refusal.message)
            yield self.refusal.error(self.request_id)
            return
        for chunk in chunks:
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


@attrs.define(eq=False)
class _CappedEvents(httpx2.AsyncByteStream):
    """An SSE stream passed on event by event, each at most ``limit`` bytes.

    An event over the bound is dropped; the request it answers (the POST's
    own, or the one its message names) gets the refusal in its place.
    """

    inner: httpx2.AsyncByteStream
    limit: int
    request_id: bytes | None
    refusal: _Refusal

    async def __aiter__(self) -> AsyncIterator[bytes]:
        pending = bytearray()
        searched = 0
        dropping = False
        async with _reading(self.inner) as pieces:
            async for chunk in pieces:
                pending += chunk
                start = 0
                # Back a little: a blank line may have been cut between two chunks.
                for blank in _BLANK_LINE.finditer(pending, max(0, searched - 3)):
                    end = blank.end()
                    if dropping:
                        dropping = False  # the end of the event refused
                    elif end - start > self.limit:
                        yield self._refused(bytes(pending[start : start + _HEAD_BYTES]))
                    else:
                        yield bytes(pending[start:end])
                    start = end
                del pending[:start]
                if not dropping and len(pending) > self.limit:
                    yield self._refused(bytes(pending[:_HEAD_BYTES]))
                    dropping = True
                if dropping:
                    del pending[:-3]  # what came of the event refused, where its end may start
                searched = len(pending)
        if pending and not dropping:
            yield bytes(pending)

    def _refused(self, head: bytes) -> bytes:
        """The event in place of one over the bound that starts with ``head``."""
        request_id = self.request_id or _event_id(head)
        if request_id is None:
            raise AnswerTooLarge(self.refusal.message)
        return b"event: message\ndata: " + self.refusal.error(request_id) + b"\n\n"

    async def aclose(self) -> None:
        await self.inner.aclose()


@attrs.define(eq=False)
class CappedTransport(httpx2.AsyncBaseTransport):
    """The transport of a link's HTTP requests: answers bounded to ``max_bytes`` (see above)."""

    inner: httpx2.AsyncBaseTransport
    max_bytes: int

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["Accept-Encoding"] = "identity"
        response = await self.inner.handle_async_request(request)
        request_id = _request_id(request)
        refusal = _too_large(self.max_bytes)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            # Asked for as it is, sent compressed: its size says nothing.
            await response.aclose()
            refusal = _Refusal(
                f"answered compressed ({encoding}) although asked not to; nothing of it "
                "was passed on"
            )
            if request_id is None:
                raise AnswerTooLarge(refusal.message)
            return httpx2.Response(
                200,
                headers={"content-type": "application/json"},
                content=refusal.error(request_id),
                request=request,
            )
        stream = cast(httpx2.AsyncByteStream, response.stream)
        content_type = response.headers.get("content-type", "").lower()
        capped = _CappedEvents if content_type.startswith("text/event-stream") else _CappedBody
        response.stream = capped(stream, self.max_bytes, request_id, refusal)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def too_many_items(result: Any) -> str | None:
    """Why ``result`` (a result as JSON) is not passed on: a list too long; None if it is."""
    if not isinstance(result, dict):
        return None
    for key, noun in _LISTS.items():
        items = result.get(key)
        if isinstance(items, list) and len(items) > MAX_RESULT_ITEMS:
            return (
                f"answered with {len(items):,} {noun}, more than the {MAX_RESULT_ITEMS:,} "
                "agentws passes on; nothing of it was passed on"
            )
    return None


def refused_if_too_many(message: types.JSONRPCMessage) -> types.JSONRPCMessage:
    """``message``, or in place of a result with a list too long, the error saying so."""
    if isinstance(message, types.JSONRPCResponse):
        problem = too_many_items(message.result)
        if problem is not None:
            return types.JSONRPCError(
                jsonrpc="2.0",
                id=message.id,
                error=types.ErrorData(code=ANSWER_REFUSED, message=problem),
            )
    return message
