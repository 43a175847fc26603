"""A link's answers are bounded as they arrive: bodies and SSE events, byte for byte.

The transport passes an answer within the bound on unchanged; one over it
is not read further, and the request it answers gets a JSON-RPC error in
its place (``ANSWER_REFUSED``), whichever way the answer came.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from agentws.connectors.answer_bounds import (
    ANSWER_REFUSED,
    MAX_RESULT_ITEMS,
    AnswerTooLarge,
    CappedTransport,
    refused_if_too_many,
)

LIMIT = 1000
REQUEST = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}


class _Chunks(httpx2.AsyncByteStream):
    """A body that arrives in the pieces given (so events are cut between them)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


def _transport(content_type: str, chunks: list[bytes], **headers: str) -> CappedTransport:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, headers={"content-type": content_type, **headers}, stream=_Chunks(chunks)
        )

    return CappedTransport(httpx2.MockTransport(answer), LIMIT)


async def _read(transport: CappedTransport, request: dict[str, Any] | None = REQUEST) -> bytes:
    async with httpx2.AsyncClient(transport=transport) as client:
        if request is None:
            response = await client.get("http://remote/mcp")
        else:
            response = await client.post("http://remote/mcp", json=request)
        assert response.request.headers["accept-encoding"] == "identity"
        return await response.aread()


def _event(message: dict[str, Any]) -> bytes:
    return b"event: message\r\ndata: " + json.dumps(message).encode() + b"\r\n\r\n"


def _refusal(body: bytes) -> dict[str, Any]:
    error: dict[str, Any] = json.loads(body)["error"]
    assert error["code"] == ANSWER_REFUSED
    return error


async def test_answers_within_the_bound_pass_unchanged() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"x": "y" * 900}}).encode()
    assert await _read(_transport("application/json", [body[:10], body[10:]])) == body
    events = _event({"jsonrpc": "2.0", "method": "notifications/progress"}) * 20
    cut = [events[n : n + 7] for n in range(0, len(events), 7)]
    assert await _read(_transport("text/event-stream", cut)) == events


async def test_a_body_over_the_bound_is_the_requests_error() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"x": "y" * 2000}}).encode()
    answer = json.loads(await _read(_transport("application/json", [body])))
    assert answer["id"] == 7
    assert (
        "more than 1,000 bytes (AGENTWS_TOOL_MAX_RESULT_BYTES)"
        in _refusal(json.dumps(answer).encode())["message"]
    )


async def test_an_event_over_the_bound_is_replaced_and_the_stream_goes_on() -> None:
    before = _event({"jsonrpc": "2.0", "method": "notifications/progress"})
    huge = _event({"jsonrpc": "2.0", "id": 3, "result": {"x": "y" * 5000}})
    after = _event({"jsonrpc": "2.0", "method": "notifications/message"})
    stream = before + huge + after
    chunks = [stream[n : n + 300] for n in range(0, len(stream), 300)]
    # A GET stream (the legacy transport's): the refused message's own id is used.
    text = await _read(_transport("text/event-stream", chunks), None)
    assert text.startswith(before)
    assert text.endswith(after)
    refused = text[len(before) : -len(after)]
    assert refused.startswith(b"event: message\ndata: ")
    error = json.loads(refused.split(b"data: ", 1)[1])
    assert error["id"] == 3
    assert _refusal(json.dumps(error).encode())["message"].startswith("answered with more than")


async def test_what_cannot_be_told_apart_is_not_read() -> None:
    huge = b"data: " + b"y" * 5000 + b"\n\n"
    with pytest.raises(AnswerTooLarge):
        await _read(_transport("text/event-stream", [huge]), None)
    compressed = _transport("application/json", [b"{}"], **{"content-encoding": "gzip"})
    assert "compressed (gzip)" in _refusal(await _read(compressed))["message"]


def test_a_result_with_too_many_items_is_an_error() -> None:
    import mcp_types as types

    items = [{"type": "text", "text": ""}] * (MAX_RESULT_ITEMS + 1)
    response = types.JSONRPCResponse(jsonrpc="2.0", id=4, result={"content": items})
    refused = refused_if_too_many(response)
    assert isinstance(refused, types.JSONRPCError)
    assert refused.id == 4
    assert refused.error.message.startswith(f"answered with {MAX_RESULT_ITEMS + 1:,} content items")
    fine = types.JSONRPCResponse(jsonrpc="2.0", id=5, result={"content": items[:10]})
    assert refused_if_too_many(fine) is fine
