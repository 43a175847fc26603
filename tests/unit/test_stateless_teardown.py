"""A stateless call's connection is unwound as the SDK's ``serve_one`` unwinds it
(``doors/mcp/dispatch/modern.py``), only not when nothing was left on it.

What a handler leaves on the connection's exit stack runs when the call
ends, whether the handler answered or failed; a call that leaves nothing
costs no shielded scope.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext

from agentws.bridges.mcp_sdk_bridge import exit_stack_has_callbacks, single_exchange_context
from agentws.doors.mcp.dispatch.modern import StatelessCaller, _serve_one

MODERN = "2026-07-28"
PARAMS = {
    "name": "t",
    "arguments": {},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    },
}


def _server(fail: bool) -> Server[Any]:
    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if fail:
            raise MCPError(types.INVALID_PARAMS, "no")
        return types.CallToolResult(content=[types.TextContent(type="text", text="done")])

    return Server("teardown", on_call_tool=call_tool)


def _dctx() -> Any:
    return single_exchange_context(
        TransportContext(kind="streamable-http", can_send_request=False),
        1,
        ServerMessageMetadata(),
    )


async def _call(server: Server[Any], connection: Connection) -> dict[str, Any]:
    state = StatelessCaller(caller=None)  # type: ignore[arg-type]  # the handler reads nothing
    return await _serve_one(server, _dctx(), "tools/call", PARAMS, connection, state)


def _connection() -> Connection:
    return Connection.from_envelope(MODERN, {"name": "c", "version": "1"}, {})


@pytest.mark.parametrize("fail", [False, True])
async def test_what_a_handler_left_is_unwound(fail: bool) -> None:
    connection = _connection()
    unwound: list[str] = []

    async def cleanup() -> None:
        unwound.append("done")

    connection.exit_stack.push_async_callback(cleanup)
    if fail:
        with pytest.raises(MCPError):
            await _call(_server(fail), connection)
    else:
        result = await _call(_server(fail), connection)
        assert result["content"] == [{"type": "text", "text": "done"}]
    assert unwound == ["done"]
    assert not exit_stack_has_callbacks(connection)


async def test_a_call_that_leaves_nothing_answers_as_serve_one_does() -> None:
    from mcp.server.runner import serve_one

    ours = await _call(_server(False), _connection())
    theirs = await serve_one(
        _server(False), _dctx(), "tools/call", PARAMS, connection=_connection(), lifespan_state=None
    )
    assert ours == theirs
    assert ours["resultType"] == "complete"
