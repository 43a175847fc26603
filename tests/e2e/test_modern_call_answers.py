"""Stateless (2026-07-28) calls of in-process tools, answered as the SDK's own handler answers.

agentws answers the usual call itself (:func:`agentws.doors.mcp.dispatch.modern.serve_stateless`);
for each request here, its answer (status, content type, body) is the one the
SDK's single-exchange handler gives for the same request on the same server:
a call, a tool error, invalid parameters, a header that disagrees with the
body, a notification, a request whose id is not one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
import trio
from mcp.server._streamable_http_modern import handle_modern_request

from agentws.doors.mcp.dispatch.modern import StatelessBody, StatelessCaller, serve_stateless
from tests.e2e.mcp_support import MODERN, REQUEST_S, Running, running

_ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


def _call(arguments: Any, **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "search_context", "arguments": arguments, "_meta": _ENVELOPE, **params},
    }


# Headers some cases add to the usual ones.
EXTRA_HEADERS: dict[str, list[tuple[bytes, bytes]]] = {
    "an Mcp-Param header the tool does not declare": [(b"mcp-param-query", b"refund")],
    "a header repeated": [(b"accept", b"text/plain"), (b"x-forwarded-for", b"10.0.0.1")],
    "a routing header repeated": [(b"mcp-name", b"search_context")],
}

REQUESTS: dict[str, tuple[Any, str]] = {
    "an Mcp-Param header the tool does not declare": (_call({"query": "refund"}), "search_context"),
    "a header repeated": (_call({"query": "refund"}), "search_context"),
    "a routing header repeated": (_call({"query": "refund"}), "search_context"),
    "a call": (_call({"query": "refund"}), "search_context"),
    "no hits": (_call({"query": "zzzqqq"}), "search_context"),
    "a tool error": (_call({"query": ""}), "search_context"),
    "arguments that are not an object": (_call("refund"), "search_context"),
    "a name header that disagrees": (_call({"query": "refund"}), "read_context_document"),
    "an unknown tool": ({**_call({}), "params": {"name": "nope", "_meta": _ENVELOPE}}, "nope"),
    "no envelope": ({**_call({}), "params": {"name": "search_context"}}, "search_context"),
    "a notification": ({"jsonrpc": "2.0", "method": "tools/call"}, "search_context"),
    "an id that is not one": ({**_call({"query": "x"}), "id": None}, "search_context"),
    "not JSON-RPC": ({"id": 1, "params": {}}, "search_context"),
}


def _scope(server: Running, name: str, case: str) -> dict[str, Any]:
    headers = [
        (b"host", b"127.0.0.1"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"mcp-protocol-version", MODERN.encode()),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", name.encode()),
        *EXTRA_HEADERS.get(case, []),
    ]
    return {
        "type": "http",
        "method": "POST",
        "path": "/mcp/g/acme/ops",
        "query_string": b"",
        "headers": headers,
    }


async def _answer(
    server: Running, request: Any, name: str, case: str, *, ours: bool
) -> dict[str, Any]:
    body = json.dumps(request).encode()
    caller = await server.runtime.authenticator.authenticate(
        f"Bearer {server.token}", "acme", "ops"
    )
    mcp = server.runtime.sessions.server
    sent: list[dict[str, Any]] = []
    given = False

    async def receive() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        await trio.sleep_forever()
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = _scope(server, name, case)
    with trio.fail_after(REQUEST_S):
        if ours:
            await serve_stateless(mcp, caller, StatelessBody(body), scope, receive, send)
        else:
            await handle_modern_request(
                mcp, None, True, StatelessCaller(caller), scope, receive, cast(Any, send)
            )
    start = sent[0]
    headers = dict(start["headers"])
    return {
        "status": start["status"],
        "content-type": headers.get(b"content-type"),
        "body": b"".join(m.get("body", b"") for m in sent[1:]),
    }


@pytest.mark.parametrize("case", sorted(REQUESTS))
async def test_the_answer_is_the_sdk_handlers(tmp_path: Path, case: str) -> None:
    request, name = REQUESTS[case]
    async with running(tmp_path) as server:
        ours = await _answer(server, request, name, case, ours=True)
        theirs = await _answer(server, request, name, case, ours=False)
    assert ours == theirs
    if case == "a call":
        result = json.loads(ours["body"])["result"]
        assert result["resultType"] == "complete"
        assert result["structuredContent"]["results"]


def test_the_sdks_mcp_param_check_is_skipped_only_for_a_schema_that_declares_no_header() -> None:
    from mcp.server.lowlevel.server import Server
    from mcp_types import JSONRPCRequest

    from agentws.doors.mcp.dispatch.modern import _declares_no_header

    schemas: dict[str, Any] = {
        "plain": {"type": "object", "properties": {"q": {"type": "string"}}},
        "declares": {
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        },
    }
    server: Server[Any] = Server("t", get_tool_input_schema=schemas.get)

    def call(name: Any) -> JSONRPCRequest:
        return JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/call", params={"name": name})

    assert _declares_no_header(server, call("plain"))
    assert _declares_no_header(server, call("unknown"))  # the SDK skips it too
    assert not _declares_no_header(server, call("declares"))
    assert not _declares_no_header(server, call(7))
    assert not _declares_no_header(Server("t"), call("plain"))  # no lookup: the SDK lists tools
