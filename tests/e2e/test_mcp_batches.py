"""JSON-RPC batches on 2025-03-26 sessions (the one revision that has them).

A batch of requests is answered with a JSON array of their responses (or,
when one of them sends something before its response or is slow, with one
SSE stream of all their replies); a batch of notifications is answered 202.
Sessions of other revisions refuse batches with a JSON-RPC error.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import hypercorn.trio
import mcp_types as types
import pytest
import trio
from hypercorn.config import Config
from mcp.server.lowlevel.server import Server

from agentws.domain.models import Capability
from agentws.settings.secret_box import ensure_key_file
from tests.e2e.loop_steps import healthz_throughout, watch_steps
from tests.e2e.mcp_support import REQUEST_S, raw_session, running
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, attach_remote, tool

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)


def _request(request_id: int, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


async def test_a_batch_of_requests_gets_an_array_of_responses(tmp_path: Path) -> None:
    async with running(tmp_path) as server, httpx2.AsyncClient(timeout=REQUEST_S) as http:
        headers = await raw_session(http, server, "2025-03-26")
        batch = [
            INITIALIZED,
            _request(1, "ping"),
            _request(2, "tools/list"),
            _request(3, "tools/call", name="search_context", arguments={"query": "refund"}),
            _request(4, "no/such/method"),
        ]
        response = await http.post(server.url, json=batch, headers=headers)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "application/json"
        answers = {answer["id"]: answer for answer in response.json()}
        assert set(answers) == {1, 2, 3, 4}
        assert answers[1]["result"] == {}
        assert "search_context" in {t["name"] for t in answers[2]["result"]["tools"]}
        assert "Refund policy" in json.dumps(answers[3]["result"])
        assert answers[4]["error"]["code"] == types.METHOD_NOT_FOUND


async def test_a_batch_of_notifications_is_accepted(tmp_path: Path) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        headers = await raw_session(http, server, "2025-03-26")
        cancelled = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 99},
        }
        response = await http.post(server.url, json=[INITIALIZED, cancelled], headers=headers)
        assert response.status_code == 202, response.text
        # The session goes on.
        ping = await http.post(server.url, json=_request(1, "ping"), headers=headers)
        assert ping.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


@asynccontextmanager
async def _gated_remote(gate: trio.Event) -> AsyncIterator[str]:
    """A remote MCP server whose one tool, ``wait``, answers once ``gate`` is set."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool("wait", "Wait for the gate")])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        await gate.wait()
        return types.CallToolResult(content=[types.TextContent(type="text", text="opened")])

    server: Server[Any] = Server("gated", on_list_tools=list_tools, on_call_tool=call_tool)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.graceful_timeout = 0.2
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        app = server.streamable_http_app(streamable_http_path="/mcp")
        binds = await nursery.start(
            functools.partial(hypercorn.trio.serve, app, config, shutdown_trigger=stop.wait)
        )
        yield f"{binds[0]}/mcp"
        stop.set()


async def test_a_batch_with_a_slow_request_is_streamed(tmp_path: Path) -> None:
    ensure_key_file(tmp_path)
    env = {
        "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
        "AGENTWS_CONNECTOR_REFRESH_S": "0",
        "AGENTWS_DATA_DIR": str(tmp_path),
        "AGENTWS_SSE_KEEPALIVE_S": "0.2",
    }
    gate = trio.Event()
    async with (
        running(tmp_path, with_library=False, **env) as server,
        _gated_remote(gate) as url,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        await attach_remote(server.store, url, {"third_wait": Capability.READ})
        headers = await raw_session(http, server, "2025-03-26")
        batch = [_request(1, "ping"), _request(2, "tools/call", name="third_wait", arguments={})]
        with trio.fail_after(REQUEST_S):
            async with http.stream("POST", server.url, json=batch, headers=headers) as response:
                assert response.status_code == 200
                # Not answered within the keep-alive interval: the answer is a stream.
                assert response.headers["content-type"].startswith("text/event-stream")
                gate.set()
                text = "".join([chunk async for chunk in response.aiter_text()])
        events = [block for block in text.split("\n\n") if "data: " in block]
        fields = [
            dict(line.split(": ", 1) for line in e.split("\n") if ": " in line) for e in events
        ]
        # Each reply carries the id of its own request's stream.
        assert len({f["id"].split(".")[0] for f in fields}) == 2
        answers = {json.loads(f["data"])["id"]: json.loads(f["data"]) for f in fields}
        assert answers[1]["result"] == {}
        assert answers[2]["result"]["content"] == [{"type": "text", "text": "opened"}]


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_later_revisions_refuse_batches(tmp_path: Path, version: str) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        headers = await raw_session(http, server, version)
        response = await http.post(server.url, json=[_request(1, "ping")], headers=headers)
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == types.INVALID_REQUEST
        assert "batches are not supported" in error["message"]


@pytest.mark.parametrize(
    "batch",
    [[], [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"not": "a message"}], [1, 2]],
    ids=["empty", "one-invalid", "not-objects"],
)
async def test_a_malformed_batch_is_refused_whole(tmp_path: Path, batch: list[Any]) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        headers = await raw_session(http, server, "2025-03-26")
        response = await http.post(server.url, json=batch, headers=headers)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == types.INVALID_REQUEST


async def test_a_huge_batch_is_refused_without_stalling_the_loop(tmp_path: Path) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        headers = await raw_session(http, server, "2025-03-26")
        # Made before the watch: the client's work is not the service's.
        huge = json.dumps([_request(n, "ping") for n in range(10_000)]).encode()
        most = server.runtime.settings.mcp_max_batch_entries
        largest = json.dumps([_request(n, "ping") for n in range(most)]).encode()
        with watch_steps() as steps:
            async with healthz_throughout(server.base_url):
                refused = await http.post(server.url, content=huge, headers=headers)
                accepted = await http.post(server.url, content=largest, headers=headers)
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert error["code"] == types.INVALID_REQUEST
        assert f"at most {most} messages" in error["message"], error
        assert accepted.status_code == 200, accepted.text
        assert sorted(answer["id"] for answer in accepted.json()) == list(range(most))
        steps.assert_none_long()
