"""A session serves the handshake revisions: a 2026-07-28 request on one is refused.

The stateless revision's requests carry their own envelope and need no
session; sent on a session (either transport), they are refused with
``-32600`` as the SDK's handshake connections refuse them, and the
session goes on serving its own revision.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import trio

from tests.e2e.mcp_support import REQUEST_S, legacy_stream, running

_ACCEPT = "application/json, text/event-stream"
_ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
}


def _initialize(version: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }


def _list(request_id: int, *, enveloped: bool) -> dict[str, Any]:
    params: dict[str, Any] = {"_meta": _ENVELOPE} if enveloped else {}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": params}


async def test_a_streamable_session_refuses_an_enveloped_request(tmp_path: Path) -> None:
    async with running(tmp_path) as server, httpx2.AsyncClient(timeout=REQUEST_S) as http:
        headers = {**server.headers(), "Accept": _ACCEPT}
        opened = await http.post(server.url, json=_initialize("2025-11-25"), headers=headers)
        assert opened.status_code == 200, opened.text
        headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        headers["MCP-Protocol-Version"] = "2025-11-25"
        done = await http.post(
            server.url,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=headers,
        )
        assert done.status_code == 202

        refused = await http.post(server.url, json=_list(2, enveloped=True), headers=headers)
        answer = refused.json()
        assert answer["id"] == 2 and answer["error"]["code"] == -32600, answer
        assert "2026-07-28" in answer["error"]["message"]

        listed = await http.post(server.url, json=_list(3, enveloped=False), headers=headers)
        assert "search_context" in {t["name"] for t in listed.json()["result"]["tools"]}


async def test_a_legacy_session_refuses_an_enveloped_first_request(tmp_path: Path) -> None:
    async with (
        running(tmp_path) as server,
        legacy_stream(server) as (session_id, stream),
        httpx2.AsyncClient(base_url=server.base_url, timeout=REQUEST_S) as http,
    ):
        url = f"/mcp/g/acme/ops/messages?session_id={session_id}"

        async def answer_to(message: dict[str, Any]) -> dict[str, Any]:
            posted = await http.post(url, json=message, headers=server.headers())
            assert posted.status_code == 202
            with trio.fail_after(REQUEST_S):
                while True:
                    line = await stream.read_line()
                    assert line is not None, "the stream ended"
                    if line.startswith("data: "):
                        answer: dict[str, Any] = json.loads(line.removeprefix("data: "))
                        if answer.get("id") == message["id"]:
                            return answer

        refused = await answer_to(_list(1, enveloped=True))
        assert refused["error"]["code"] == -32600, refused
        opened = await answer_to({**_initialize("2024-11-05"), "id": 2})
        assert opened["result"]["protocolVersion"] == "2024-11-05"
