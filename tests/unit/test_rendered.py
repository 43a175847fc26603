"""RenderedResults: the JSON of a reused result, made once and spliced into responses."""

from __future__ import annotations

import json

from mcp_types import JSONRPCResponse

from agentws.doors.mcp.sessions.rendered import RenderedResults

TOOLS = [
    {"name": "gh_search", "description": "Sëarch — ünïcode", "inputSchema": {"type": "object"}},
    {"name": "gh_list", "description": "List", "inputSchema": {"type": "object"}},
]


def _response(result: dict[str, object], request_id: int | str = 7) -> JSONRPCResponse:
    # What the SDK does to a handler's dict: a shallow copy, then the envelope.
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result=dict(result))


def test_a_remembered_result_is_sent_as_the_sdk_would_send_it() -> None:
    wire = {"tools": TOOLS}
    rendered = RenderedResults()
    rendered.remember(wire)
    for request_id in (7, "req-9"):
        message = _response(wire, request_id)
        text = rendered.response_json(message)
        assert text is not None
        expected = message.model_dump_json(by_alias=True, exclude_unset=True)
        assert json.loads(text) == json.loads(expected)


def test_only_the_very_same_values_are_recognised() -> None:
    wire = {"tools": TOOLS}
    rendered = RenderedResults()
    rendered.remember(wire)
    # Equal but not the same list: another listing, perhaps of another catalog version.
    assert rendered.response_json(_response({"tools": list(TOOLS)})) is None
    assert rendered.response_json(_response({"tools": TOOLS, "nextCursor": "x"})) is None
    assert rendered.response_json(JSONRPCResponse(jsonrpc="2.0", id=1, result={})) is None


def test_the_least_recently_used_is_forgotten_beyond_capacity() -> None:
    rendered = RenderedResults(capacity=2)
    first, second, third = ({"tools": [dict(tool)]} for tool in (*TOOLS, TOOLS[0]))
    rendered.remember(first)
    rendered.remember(second)
    assert rendered.response_json(_response(first)) is not None  # first is now the newest
    rendered.remember(third)
    assert rendered.response_json(_response(second)) is None
    assert rendered.response_json(_response(first)) is not None
    assert rendered.response_json(_response(third)) is not None
