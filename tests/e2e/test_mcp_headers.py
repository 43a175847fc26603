"""``MCP-Protocol-Version`` and ``Accept`` on Streamable HTTP requests.

On a session, a version agentws does not speak is refused with 400 and a
JSON-RPC error listing the ones it does; no header means the negotiated
version, and a known version passes (as with the SDK's reference server).
A ``POST`` must accept both JSON and SSE, a ``GET`` stream SSE, or 406,
with the SDK's reading of ``Accept`` (``*/*``, ``application/*``, ``text/*``).
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import mcp_types as types
import pytest
import trio
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tests.e2e.mcp_support import REQUEST_S, Running, raw_request, running

ACCEPT = "application/json, text/event-stream"
PING = {"jsonrpc": "2.0", "id": 5, "method": "ping"}


async def _open(http: httpx2.AsyncClient, server: Running) -> str:
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    response = await http.post(
        server.url, json=initialize, headers={**server.headers(), "Accept": ACCEPT}
    )
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


@pytest.mark.parametrize("version", ["2030-01-01", "2026-07-28", "bogus", ""])
async def test_a_session_request_naming_an_unknown_version_is_400(
    tmp_path: Path, version: str
) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        session_id = await _open(http, server)
        headers = {
            **server.headers(),
            "Accept": ACCEPT,
            "Mcp-Session-Id": session_id,
            "MCP-Protocol-Version": version,
        }
        for method in ("POST", "GET", "DELETE"):
            response = await http.request(
                method, server.url, json=PING if method == "POST" else None, headers=headers
            )
            assert response.status_code == 400, (method, response.text)
            error = response.json()["error"]
            assert error["code"] == types.UNSUPPORTED_PROTOCOL_VERSION
            assert "2025-06-18" in error["message"]
            assert error["data"] == {
                "supported": list(HANDSHAKE_PROTOCOL_VERSIONS),
                "requested": version,
            }
        # The session is still there and answers a good request.
        del headers["MCP-Protocol-Version"]
        assert (await http.post(server.url, json=PING, headers=headers)).status_code == 200


@pytest.mark.parametrize("version", [None, "2025-06-18", "2025-03-26"])
async def test_no_version_or_a_known_one_is_answered(tmp_path: Path, version: str | None) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        session_id = await _open(http, server)
        headers = {**server.headers(), "Accept": ACCEPT, "Mcp-Session-Id": session_id}
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        response = await http.post(server.url, json=PING, headers=headers)
        assert response.status_code == 200, response.text
        assert response.json() == {"jsonrpc": "2.0", "id": 5, "result": {}}


@pytest.mark.parametrize(
    ("accept", "status"),
    [
        (ACCEPT, 200),
        ("*/*", 200),
        ("application/*, text/*", 200),
        ("application/json;q=0.9, text/event-stream;q=0.5", 200),
        ("application/json", 406),
        ("text/event-stream", 406),
        ("text/html", 406),
        ("", 406),
    ],
)
async def test_a_post_must_accept_json_and_sse(tmp_path: Path, accept: str, status: int) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        session_id = await _open(http, server)
        headers = {**server.headers(), "Accept": accept, "Mcp-Session-Id": session_id}
        response = await http.post(server.url, json=PING, headers=headers)
        assert response.status_code == status, response.text
        if status == 406:
            assert response.json()["error"]["code"] == "not_acceptable"
            assert "application/json and text/event-stream" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("accept", "status"),
    [("text/event-stream", 200), ("*/*", 200), ("text/*", 200), ("application/json", 406)],
)
async def test_the_get_stream_must_accept_sse(tmp_path: Path, accept: str, status: int) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        session_id = await _open(http, server)
        headers = {**server.headers(), "Accept": accept, "Mcp-Session-Id": session_id}
        with trio.fail_after(REQUEST_S):
            async with raw_request(server, "GET", "/mcp/g/acme/ops", headers) as response:
                assert response.status == status
