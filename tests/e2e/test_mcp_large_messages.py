"""Large MCP messages never hold the event loop: each step of their handling stays short.

A ``tools/call`` carries arguments of up to ``AGENTWS_TOOL_MAX_ARGUMENT_BYTES``
(1 MiB); a body larger than that and its envelope is refused (413) before
it is parsed, a body that is no JSON-RPC message is refused as cheaply as
it is parsed, and an accepted call parses and encodes its arguments as few
times as it can, in steps of their own. Each case below is sent to a
served agentws, over a session and statelessly (2026-07-28), while
``/healthz`` is asked again and again; no task step of the service may use
more than 100 ms of CPU (on the reference machine: :mod:`tests.e2e.loop_steps`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest

from agentws.domain.models import Capability
from tests.e2e.loop_steps import healthz_throughout, watch_steps
from tests.e2e.mcp_support import (
    ACCEPT,
    MODERN,
    REQUEST_S,
    Running,
    jsonrpc_answer,
    raw_session,
    result_text,
    running,
)
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

ALLOW = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


def _many_keys(size: int) -> dict[str, Any]:
    """About ``size`` bytes of JSON object with one short member per 14 bytes.

    The costliest shape to parse and to encode, per byte. One key starts
    like a stateless call's ``requestState`` (``agwp_``), which a door once
    parsed the whole body again for.
    """
    members = {f"k{n:07d}": 1 for n in range(size // 14)}
    members["agwp_x"] = 1
    return members


def _call(name: str, arguments: dict[str, Any], *, request_id: Any = 1, **meta: Any) -> bytes:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(message, separators=(",", ":")).encode()


def _stateless(server: Running, name: str) -> dict[str, str]:
    return {
        **server.headers(),
        "Accept": ACCEPT,
        "Content-Type": "application/json",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }


async def test_large_messages_are_handled_in_short_steps(tmp_path: Path) -> None:
    state = ThirdParty([tool("echo", "Echo the query")])
    async with (
        running(tmp_path, **ALLOW) as server,
        third_party_server(state) as url,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        await attach_remote(server.store, url, {"third_echo": Capability.READ})
        session = await raw_session(http, server)
        limit = server.runtime.settings.tool_max_argument_bytes
        # Made before the watch: the client's work is not the service's.
        largest = _many_keys(limit - 4096)
        largest["q"] = "largest"
        whole = _call("third_echo", largest)
        modern = _call("third_echo", largest, **ENVELOPE)
        builtin = _call("search_context", {**largest, "query": "refund"}, **ENVELOPE)
        too_large = _call("third_echo", _many_keys(2 * limit))
        no_message = json.dumps(_many_keys(limit), separators=(",", ":")).encode()
        float_id = _call("third_echo", largest, request_id=1.5)
        with watch_steps() as steps:
            async with healthz_throughout(server.base_url):
                answers = {
                    "session": await http.post(server.url, content=whole, headers=session),
                    "stateless": await http.post(
                        server.url, content=modern, headers=_stateless(server, "third_echo")
                    ),
                    "builtin": await http.post(
                        server.url, content=builtin, headers=_stateless(server, "search_context")
                    ),
                    "too_large": await http.post(server.url, content=too_large, headers=session),
                    "no_message": await http.post(server.url, content=no_message, headers=session),
                    "float_id": await http.post(server.url, content=float_id, headers=session),
                }
        for name in ("session", "stateless"):
            assert answers[name].status_code == 200, answers[name].text
            answer = jsonrpc_answer(answers[name])
            assert result_text(answer) == "third-party found: largest", answer
        assert state.arguments == [largest, largest]
        # Refused by its schema (no other members), after the same parse and checks.
        refused = jsonrpc_answer(answers["builtin"])
        assert result_text(refused).startswith("Invalid arguments for search_context: "), refused
        assert answers["too_large"].status_code == 413, answers["too_large"].text
        # Its rest is never read: a kept-alive client must not send its next request there.
        assert answers["too_large"].headers["connection"] == "close"
        assert "AGENTWS_MCP_MAX_BODY_BYTES" in answers["too_large"].json()["error"]["message"]
        for name in ("no_message", "float_id"):
            assert answers[name].status_code == 400, answers[name].text
            assert answers[name].json()["error"]["code"] == types.INVALID_REQUEST
        steps.assert_none_long()
