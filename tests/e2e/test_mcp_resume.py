"""SSE event ids, ``Last-Event-ID`` resumption, priming events and SSE polling.

Every event on a Streamable HTTP stream has an id naming its stream; a
client whose stream broke reconnects with ``GET`` and ``Last-Event-ID`` and
gets what that stream had after it (a request's response included, when the
request finished while nobody read), within ``AGENTWS_MCP_REPLAY_EVENTS`` /
``AGENTWS_MCP_REPLAY_S``. Clients of 2025-11-25 get a priming event (an id,
empty data, ``retry``) first; with ``AGENTWS_MCP_SSE_POLL_S`` a request's
stream is closed before its response and the SDK client resumes it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
import trio

from agentws.domain.models import Capability
from agentws.doors.mcp.sessions.supervisor import McpSession
from agentws.settings.secret_box import ensure_key_file
from agentws.workspaces.admin import create_token
from tests.e2e.mcp_support import REQUEST_S, RawStream, Running, raw_request, running, sdk_session
from tests.e2e.polling import wait_for
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

ACCEPT = "application/json, text/event-stream"
PATH = "/mcp/g/acme/ops"


def _initialize(version: str, **capabilities: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }


async def _open(http: httpx2.AsyncClient, server: Running, token: str, version: str) -> str:
    """A raw Streamable HTTP session of ``version`` (elicitation declared); its id."""
    headers = {**server.headers(token), "Accept": ACCEPT}
    response = await http.post(
        server.url, json=_initialize(version, elicitation={}), headers=headers
    )
    assert response.status_code == 200, response.text
    assert response.json()["result"]["protocolVersion"] == version
    session_id = response.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    response = await http.post(
        server.url, json=initialized, headers={**headers, "Mcp-Session-Id": session_id}
    )
    assert response.status_code == 202
    return session_id


async def read_event(stream: RawStream) -> dict[str, str] | None:
    """The next SSE event's fields (comments skipped); None once the response ended."""
    fields: dict[str, str] = {}
    while True:
        line = await stream.read_line()
        if line is None:
            return None
        if line == "":
            if fields:
                return fields
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        fields[name] = value.removeprefix(" ")


def _session(server: Running, session_id: str) -> McpSession:
    session = server.runtime.sessions.get(session_id)
    assert session is not None
    return session


async def _log(session: McpSession, text: str) -> None:
    """A notification outside any request: it goes to the session's GET stream."""
    assert session.server_session is not None
    await session.server_session.send_notification(
        types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level="info", data=text)
        )
    )


@asynccontextmanager
async def _get_stream(
    server: Running, session_id: str, last_event_id: str | None = None
) -> AsyncIterator[RawStream]:
    headers = {**server.headers(), "Accept": "text/event-stream", "Mcp-Session-Id": session_id}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    async with raw_request(server, "GET", PATH, headers) as stream:
        yield stream


async def _call(http: httpx2.AsyncClient, server: Running, session_id: str) -> None:
    """A tools/call (which lets the test send notifications through the session)."""
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_context", "arguments": {"query": "refund"}},
    }
    headers = {**server.headers(), "Accept": ACCEPT, "Mcp-Session-Id": session_id}
    response = await http.post(server.url, json=call, headers=headers)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_the_get_stream_resumes_after_last_event_id(tmp_path: Path, version: str) -> None:
    async with running(tmp_path) as server, httpx2.AsyncClient(timeout=REQUEST_S) as http:
        session_id = await _open(http, server, server.token, version)
        await _call(http, server, session_id)
        session = _session(server, session_id)
        with trio.fail_after(REQUEST_S):
            async with _get_stream(server, session_id) as stream:
                assert stream.status == 200
                if version >= "2025-11-25":
                    priming = await read_event(stream)
                    assert priming == {"id": "0.0", "retry": "1000", "data": ""}
                await _log(session, "one")
                first = await read_event(stream)
                assert first is not None
                assert first["id"] == "0.1"
                assert json.loads(first["data"])["params"]["data"] == "one"
            # The client is gone; what the stream gets meanwhile is kept.
            await wait_for(lambda: session.stream is None, what="the GET stream detached")
            await _log(session, "two")
            await _log(session, "three")
            async with _get_stream(server, session_id, last_event_id="0.1") as resumed:
                assert resumed.status == 200
                if version >= "2025-11-25":
                    assert (await read_event(resumed)) == {
                        "id": "0.1",
                        "retry": "1000",
                        "data": "",
                    }
                missed = [await read_event(resumed) for _ in range(2)]
                assert [e["id"] for e in missed if e] == ["0.2", "0.3"]
                texts = [json.loads(e["data"])["params"]["data"] for e in missed if e]
                assert texts == ["two", "three"]
                # And it goes on live.
                await _log(session, "four")
                live = await read_event(resumed)
                assert live is not None
                assert live["id"] == "0.4"


async def test_replay_keeps_the_newest_events_and_unknown_ids_get_404(tmp_path: Path) -> None:
    env = {"AGENTWS_MCP_REPLAY_EVENTS": "2"}
    async with running(tmp_path, **env) as server, httpx2.AsyncClient(timeout=REQUEST_S) as http:
        session_id = await _open(http, server, server.token, "2025-06-18")
        await _call(http, server, session_id)
        session = _session(server, session_id)
        with trio.fail_after(REQUEST_S):
            for text in ("a", "b", "c", "d"):
                await _log(session, text)
            async with _get_stream(server, session_id, last_event_id="0.0") as resumed:
                events = [await read_event(resumed) for _ in range(2)]
                assert [e["id"] for e in events if e] == ["0.3", "0.4"]
            for unknown in ("0.99", "77.1", "nonsense", "0.-1"):
                async with _get_stream(server, session_id, last_event_id=unknown) as refused:
                    assert refused.status == 404, unknown


@asynccontextmanager
async def _served(tmp_path: Path, **env: str) -> AsyncIterator[tuple[Running, str]]:
    """agentws with a remote destructive tool ``third_drop``; a token that may use it."""
    ensure_key_file(tmp_path)
    state = ThirdParty([tool("drop", "Drop the table", destructive_hint=True)])
    settings = {
        "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
        "AGENTWS_CONNECTOR_REFRESH_S": "0",
        "AGENTWS_DATA_DIR": str(tmp_path),
        **env,
    }
    async with (
        running(tmp_path, with_library=False, **settings) as server,
        third_party_server(state) as url,
    ):
        await attach_remote(server.store, url, {"third_drop": Capability.DESTRUCTIVE})
        issued = await create_token(
            server.store, "acme", "ops", name="lead", scope=Capability.DESTRUCTIVE, actor="t"
        )
        yield server, issued.secret


async def test_a_request_stream_dropped_before_its_response_resumes_with_it(
    tmp_path: Path,
) -> None:
    async with _served(tmp_path) as (server, token), httpx2.AsyncClient(timeout=REQUEST_S) as http:
        session_id = await _open(http, server, token, "2025-11-25")
        headers = {**server.headers(token), "Accept": ACCEPT, "Mcp-Session-Id": session_id}
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "third_drop", "arguments": {"q": "users"}},
        }
        with trio.fail_after(REQUEST_S):
            post_headers = {**headers, "Content-Type": "application/json"}
            async with raw_request(
                server, "POST", PATH, post_headers, json.dumps(call).encode()
            ) as post:
                assert post.headers["content-type"].startswith("text/event-stream")
                priming = await read_event(post)
                assert priming is not None
                stream_key = priming["id"].split(".")[0]
                assert priming == {"id": f"{stream_key}.0", "retry": "1000", "data": ""}
                asked = await read_event(post)
                assert asked is not None
                assert asked["id"] == f"{stream_key}.1"
                elicitation = json.loads(asked["data"])
                assert elicitation["method"] == "elicitation/create"
            # The connection dropped while the call waits for the answer.
            session = _session(server, session_id)
            await wait_for(lambda: session.unread_requests() == 1, what="the POST detached")
            answer = {
                "jsonrpc": "2.0",
                "id": elicitation["id"],
                "result": {"action": "accept", "content": {"confirm": True}},
            }
            response = await http.post(server.url, json=answer, headers=headers)
            assert response.status_code == 202
            await wait_for(lambda: session.unread_requests() == 0, what="the call answered")
            resume = {**headers, "Accept": "text/event-stream", "Last-Event-ID": asked["id"]}
            async with raw_request(server, "GET", PATH, resume) as resumed:
                assert resumed.status == 200
                assert (await read_event(resumed)) == {
                    "id": asked["id"],
                    "retry": "1000",
                    "data": "",
                }
                result = await read_event(resumed)
                assert result is not None
                assert result["id"] == f"{stream_key}.2"
                response_body = json.loads(result["data"])
                assert response_body["id"] == 7
                assert "third-party found: users" in json.dumps(response_body["result"])
                # The request's stream ends with its response.
                assert await read_event(resumed) is None


async def test_the_sdk_client_resumes_a_request_stream_the_server_closed(tmp_path: Path) -> None:
    """SSE polling: the server closes the call's stream; the SDK client resumes it with GET."""
    env = {"AGENTWS_MCP_SSE_POLL_S": "0.2"}
    async with _served(tmp_path, **env) as (server, token):

        async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            # Answer only once nobody reads the call's stream: the server closed it.
            (session,) = server.runtime.sessions.all()
            await wait_for(lambda: session.unread_requests() == 1, what="the stream closed")
            return types.ElicitResult(action="accept", content={"confirm": True})

        async with sdk_session(server, "streamable", token=token, elicitation_callback=elicit) as (
            session
        ):
            with trio.fail_after(REQUEST_S):
                result = await session.call_tool("third_drop", {"q": "orders"})
            assert not result.is_error, result
            texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
            assert texts == ["third-party found: orders"]
