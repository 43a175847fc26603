"""The MCP door's HTTP behaviour, spoken to with raw HTTP and the SDK's clients.

Auth on every request, instant revocation, DNS-rebinding protection, session
ids and their owners, caps, idle expiry, malformed input, and shutdown with
sessions open. Content (tools, resources, prompts) is tested in
``test_mcp_content.py``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from agentws.domain.models import ContextDocument, Library
from agentws.workspaces.admin import create_token, revoke_token
from tests.e2e.mcp_support import (
    REQUEST_S,
    Running,
    legacy_stream,
    raw_request,
    running,
    sdk_session,
)
from tests.e2e.polling import wait_for
from tests.e2e.slow_client_support import assert_timed_out, request_head, trickle
from tests.support import clean_env

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
ACCEPT = "application/json, text/event-stream"
# Revocation must reach an open stream within this (the bound).
REVOCATION_S = 1.0


def _rpc(method: str, request_id: int | None = 2, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        message["id"] = request_id
    return message


def _sales(server: Running) -> str:
    return server.url.replace("/ops", "/sales")


async def _initialize(http: httpx2.AsyncClient, server: Running, token: str | None = None) -> str:
    url = _sales(server) if token == server.other_token else server.url
    response = await http.post(
        url, json=INITIALIZE, headers={**server.headers(token), "Accept": ACCEPT}
    )
    assert response.status_code == 200, response.text
    assert response.json()["result"]["protocolVersion"] == "2025-06-18"
    session_id = response.headers["mcp-session-id"]
    initialized = await http.post(
        url,
        json=_rpc("notifications/initialized", None),
        headers={**server.headers(token), "Accept": ACCEPT, "Mcp-Session-Id": session_id},
    )
    assert initialized.status_code == 202
    assert initialized.headers["mcp-session-id"] == session_id
    return session_id


@asynccontextmanager
async def _http() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=REQUEST_S) as http:
        yield http


# --- auth -----------------------------------------------------------------------------


async def test_wrong_missing_other_group_and_revoked_tokens_get_401(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=False) as server, _http() as http:
        revoked = await create_token(server.store, "acme", "ops", name="old", actor="t")
        await revoke_token(server.store, "acme", "ops", revoked.token.id, actor="t")
        cases = {
            "missing": {},
            "not bearer": {"Authorization": f"Basic {server.token}"},
            "unknown": {"Authorization": "Bearer agws_" + "x" * 43},
            "not ours": {"Authorization": "Bearer sk-something"},
            "other group": server.headers(server.other_token),
            "revoked": server.headers(revoked.secret),
        }
        for case, headers in cases.items():
            for method, kwargs in (
                ("POST", {"json": INITIALIZE}),
                ("GET", {}),
                ("DELETE", {}),
            ):
                response = await http.request(
                    method, server.url, headers={**headers, "Accept": ACCEPT}, **kwargs
                )
                assert response.status_code == 401, (case, method, response.text)
                assert response.headers["www-authenticate"].startswith('Bearer realm="agentws"')
                error = response.json()["error"]
                assert error["code"] == "unauthorized"
                assert error["message"], case
            if case == "revoked":
                assert "revoked" in error["message"]
        # The legacy messages endpoint checks the token too.
        async with legacy_stream(server) as (session_id, _):
            response = await http.post(
                f"{server.url}/messages?session_id={session_id}",
                json=_rpc("ping"),
                headers=server.headers(server.other_token),
            )
            assert response.status_code == 401
        # No session was opened by any refused request.
        await wait_for(lambda: len(server.runtime.sessions) == 0, what="no sessions")


async def test_a_session_used_with_another_token_is_404(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=False) as server, _http() as http:
        second = await create_token(server.store, "acme", "ops", name="second", actor="t")
        session_id = await _initialize(http, server)
        response = await http.post(
            server.url,
            json=_rpc("ping"),
            headers={
                **server.headers(second.secret),
                "Accept": ACCEPT,
                "Mcp-Session-Id": session_id,
            },
        )
        assert response.status_code == 404
        async with legacy_stream(server) as (legacy_id, _):
            response = await http.post(
                f"{server.url}/messages?session_id={legacy_id}",
                json=_rpc("ping"),
                headers=server.headers(second.secret),
            )
            assert response.status_code == 404
        # The owner still can.
        response = await http.post(
            server.url,
            json=_rpc("ping"),
            headers={**server.headers(), "Accept": ACCEPT, "Mcp-Session-Id": session_id},
        )
        assert response.status_code == 200
        assert response.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}


async def test_revoking_a_token_closes_its_streams_within_a_second(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=False) as server, _http() as http:
        other_session = await _initialize(http, server, server.other_token)
        ended: dict[str, float] = {}

        async def hold_legacy(task_status: trio.TaskStatus[None]) -> None:
            async with legacy_stream(server) as (_, stream):
                task_status.started()
                await stream.read_to_end()
            ended["sse"] = trio.current_time()

        async def hold_standalone(task_status: trio.TaskStatus[None]) -> None:
            session_id = await _initialize(http, server)
            headers = {
                **server.headers(),
                "Accept": "text/event-stream",
                "Mcp-Session-Id": session_id,
            }
            async with raw_request(server, "GET", "/mcp/g/acme/ops", headers) as response:
                assert response.status == 200
                assert response.headers["mcp-session-id"] == session_id
                task_status.started()
                await response.read_to_end()
            ended["streamable"] = trio.current_time()

        with trio.fail_after(REQUEST_S):
            async with trio.open_nursery() as nursery:
                await nursery.start(hold_legacy)
                await nursery.start(hold_standalone)
                assert len(server.runtime.sessions) == 3
                # As `agentws token revoke` does, from any process: the store changes,
                # the server notices on its own.
                await revoke_token(server.store, "acme", "ops", "tests", actor="t")
                revoked_at = trio.current_time()
        assert set(ended) == {"sse", "streamable"}
        assert max(ended.values()) - revoked_at < REVOCATION_S
        # The next request with the revoked token fails; other tokens are untouched.
        response = await http.post(
            server.url, json=INITIALIZE, headers={**server.headers(), "Accept": ACCEPT}
        )
        assert response.status_code == 401
        assert "revoked" in response.json()["error"]["message"]
        assert server.runtime.sessions.get(other_session) is not None


# --- DNS rebinding ----------------------------------------------------------------------------


async def test_foreign_host_or_origin_is_403(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=False) as server, _http() as http:
        for headers in (
            {"Host": "evil.example"},
            {"Origin": "https://evil.example"},
            {"Origin": "null"},
        ):
            response = await http.post(
                server.url,
                json=INITIALIZE,
                headers={**server.headers(), "Accept": ACCEPT, **headers},
            )
            assert response.status_code == 403, headers
            assert response.json()["error"]["code"] == "forbidden"
        # A local page (the MCP Inspector) may call a loopback server.
        response = await http.post(
            server.url,
            json=INITIALIZE,
            headers={**server.headers(), "Accept": ACCEPT, "Origin": "http://localhost:6274"},
        )
        assert response.status_code == 200


async def test_configured_hosts_and_origins_replace_the_defaults(tmp_path: Path) -> None:
    env = {
        "AGENTWS_ALLOWED_HOSTS": "agents.example.com",
        "AGENTWS_ALLOWED_ORIGINS": "https://app.example.com",
    }
    async with running(tmp_path, with_library=False, **env) as server, _http() as http:
        base = {**server.headers(), "Accept": ACCEPT}
        refused = await http.post(server.url, json=INITIALIZE, headers=base)
        assert refused.status_code == 403
        assert "AGENTWS_ALLOWED_HOSTS" in refused.json()["error"]["message"]
        allowed = {**base, "Host": "agents.example.com", "Origin": "https://app.example.com"}
        assert (await http.post(server.url, json=INITIALIZE, headers=allowed)).status_code == 200


# --- sessions -----------------------------------------------------------------------------------


async def test_session_ids_name_the_instance_and_every_response_carries_them(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, with_library=False) as server, _http() as http:
        session_id = await _initialize(http, server)
        assert session_id.startswith("test-1.")
        assert len(session_id) > len("test-1.") + 16
        headers = {**server.headers(), "Accept": ACCEPT, "Mcp-Session-Id": session_id}
        for message in (_rpc("ping"), _rpc("no/such/method")):
            response = await http.post(server.url, json=message, headers=headers)
            assert response.status_code == 200
            assert response.headers["mcp-session-id"] == session_id
        assert response.json()["error"]["code"] == -32601
        deleted = await http.delete(server.url, headers=headers)
        assert deleted.status_code == 204
        assert deleted.headers["mcp-session-id"] == session_id
        gone = await http.post(server.url, json=_rpc("ping"), headers=headers)
        assert gone.status_code == 404
        async with legacy_stream(server) as (legacy_id, _):
            assert legacy_id.startswith("test-1.")
            accepted = await http.post(
                f"{server.url}/messages?session_id={legacy_id}",
                json=_rpc("ping"),
                headers=server.headers(),
            )
            assert accepted.status_code == 202
            assert accepted.headers["mcp-session-id"] == legacy_id


async def test_idle_sessions_expire(tmp_path: Path) -> None:
    # The wiring only: the timer itself is tested on the autojump clock
    # (tests/unit/test_session_timers.py).
    idle = {"AGENTWS_MCP_IDLE_S": "0.3"}
    async with running(tmp_path, with_library=False, **idle) as server, _http() as http:
        session_id = await _initialize(http, server)
        await wait_for(lambda: server.runtime.sessions.get(session_id) is None, what="expiry")
        response = await http.post(
            server.url,
            json=_rpc("ping"),
            headers={**server.headers(), "Accept": ACCEPT, "Mcp-Session-Id": session_id},
        )
        assert response.status_code == 404


async def test_session_caps_answer_503_with_retry_after(tmp_path: Path) -> None:
    env = {"AGENTWS_MCP_MAX_SESSIONS_PER_TOKEN": "2", "AGENTWS_MCP_MAX_SESSIONS": "3"}
    async with running(tmp_path, with_library=False, **env) as server, _http() as http:
        await _initialize(http, server)
        await _initialize(http, server)
        over = await http.post(
            server.url, json=INITIALIZE, headers={**server.headers(), "Accept": ACCEPT}
        )
        assert over.status_code == 503
        assert int(over.headers["retry-after"]) >= 1
        assert "AGENTWS_MCP_MAX_SESSIONS_PER_TOKEN" in over.json()["error"]["message"]
        legacy = await http.get(
            server.url, headers={**server.headers(), "Accept": "text/event-stream"}
        )
        assert legacy.status_code == 503
        await _initialize(http, server, server.other_token)
        full = await http.post(
            _sales(server),
            json=INITIALIZE,
            headers={**server.headers(server.other_token), "Accept": ACCEPT},
        )
        assert full.status_code == 503
        assert "AGENTWS_MCP_MAX_SESSIONS" in full.json()["error"]["message"]
        assert len(server.runtime.sessions) == 3


# --- malformed input ----------------------------------------------------------------------------


async def test_malformed_requests_get_clear_errors(tmp_path: Path) -> None:
    env = {"AGENTWS_MCP_MAX_BODY_BYTES": "10000"}
    async with running(tmp_path, with_library=False, **env) as server, _http() as http:
        session_id = await _initialize(http, server)
        headers = {**server.headers(), "Accept": ACCEPT, "Mcp-Session-Id": session_id}
        not_json = await http.post(
            server.url, content=b"{nope", headers={**headers, "Content-Type": "application/json"}
        )
        assert not_json.status_code == 400
        assert not_json.json()["error"]["code"] == -32700
        batch = await http.post(server.url, json=[_rpc("ping")], headers=headers)
        assert batch.status_code == 400
        assert "batch" in batch.json()["error"]["message"]
        not_rpc = await http.post(server.url, json={"hello": "world"}, headers=headers)
        assert not_rpc.status_code == 400
        assert not_rpc.json()["error"]["code"] == -32600
        text = await http.post(
            server.url, content=b"ping", headers={**headers, "Content-Type": "text/plain"}
        )
        assert text.status_code == 415
        huge = await http.post(server.url, json=_rpc("ping", padding="x" * 20000), headers=headers)
        assert huge.status_code == 413
        no_session = await http.post(
            server.url, json=_rpc("ping"), headers={**server.headers(), "Accept": ACCEPT}
        )
        assert no_session.status_code == 400
        assert "initialize" in no_session.json()["error"]["message"]
        unknown = await http.post(
            server.url, json=_rpc("ping"), headers={**headers, "Mcp-Session-Id": "test-1.nope"}
        )
        assert unknown.status_code == 404
        put = await http.put(server.url, json=_rpc("ping"), headers=headers)
        assert put.status_code == 405
        assert put.headers["allow"] == "GET, POST, DELETE"
        elsewhere = await http.get(f"{server.base_url}/mcp/nothing", headers=headers)
        assert elsewhere.status_code == 404
        # The session survived all of it.
        ok = await http.post(server.url, json=_rpc("ping"), headers=headers)
        assert ok.json()["result"] == {}


# A body read timeout short enough for a test; trickled bodies would take seconds.
BODY_TIMEOUT_S = 0.5
TRICKLE_S = 0.1
CUT_S = 5.0


async def test_a_body_that_trickles_in_is_cut_off_with_408(tmp_path: Path) -> None:
    """A message not all there within AGENTWS_BODY_READ_TIMEOUT_S: 408, connection closed."""
    env = {"AGENTWS_BODY_READ_TIMEOUT_S": str(BODY_TIMEOUT_S)}
    async with running(tmp_path, with_library=False, **env) as server, _http() as http:
        session_id = await _initialize(http, server)
        path = server.url.removeprefix(server.base_url)
        ping = json.dumps(_rpc("ping", padding="x" * 40)).encode()
        initialize = json.dumps(INITIALIZE).encode()
        base = {**server.headers(), "Accept": ACCEPT, "Content-Type": "application/json"}
        # (path, headers, body): a new session, an open one, a legacy session's POST URL.
        cases = [
            (path, base, initialize),
            (path, {**base, "Mcp-Session-Id": session_id}, ping),
            (path + "/messages?session_id=test-1.none", base, ping),
        ]
        results = []

        async def slow_client(case: tuple[str, dict[str, str], bytes], chunked: bool) -> None:
            where, headers, body = case
            head = request_head(
                where, server.base_url, headers, length=None if chunked else len(body)
            )
            trickled = await trickle(
                server.base_url, head, body, every_s=TRICKLE_S, bound_s=CUT_S, chunked=chunked
            )
            results.append((where, body, trickled))

        async with trio.open_nursery() as nursery:
            for case in cases[:2]:
                for chunked in (False, True):
                    nursery.start_soon(slow_client, case, chunked)
        for _where, body, trickled in results:
            assert_timed_out(trickled, body_length=len(body))
        assert len(results) == 4
        # The legacy POST URL of an unknown session is refused before its body is read.
        (where, headers, body) = cases[2]
        head = request_head(where, server.base_url, headers, length=len(body))
        early = await trickle(server.base_url, head, body, every_s=TRICKLE_S, bound_s=CUT_S)
        assert early.reply.closed and early.reply.statuses == [404], early.reply
        # The session is still there, and so is the server.
        ok = await http.post(
            server.url, json=_rpc("ping"), headers={**base, "Mcp-Session-Id": session_id}
        )
        assert ok.json()["result"] == {}


async def test_a_slow_steady_message_within_the_timeout_is_answered(tmp_path: Path) -> None:
    """The timeout bounds the whole body: a large message that arrives in time is fine."""
    env = {"AGENTWS_BODY_READ_TIMEOUT_S": "5"}
    async with running(tmp_path, with_library=False, **env) as server, _http() as http:
        session_id = await _initialize(http, server)
        body = json.dumps(_rpc("ping", padding="x" * (512 * 1024))).encode()
        pieces = 20

        async def steady() -> AsyncIterator[bytes]:
            step = len(body) // pieces + 1
            for at in range(0, len(body), step):
                yield body[at : at + step]
                await trio.sleep(0.05)  # a slow link: about a second for the body

        headers = {
            **server.headers(),
            "Accept": ACCEPT,
            "Content-Type": "application/json",
            "Mcp-Session-Id": session_id,
        }
        answer = await http.post(server.url, content=steady(), headers=headers)
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"] == {}


# --- SDK clients ---------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["sse", "streamable"])
async def test_sdk_clients_connect_and_disconnect_cleanly(tmp_path: Path, transport: str) -> None:
    async with running(tmp_path, with_library=False) as server:
        async with sdk_session(server, transport) as session:
            await session.send_ping()
            assert (await session.list_tools()).tools == []
            assert len(server.runtime.sessions) == 1
        await wait_for(lambda: len(server.runtime.sessions) == 0, what="session closed")


async def test_sdk_client_in_auto_mode_takes_the_newest_revision(tmp_path: Path) -> None:
    # server/discover answers, so the client speaks 2026-07-28: no handshake, no session.
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(headers=server.headers(), timeout=REQUEST_S) as http,
    ):
        transport = streamable_http_client(server.url, http_client=http)
        with trio.fail_after(REQUEST_S):
            async with Client(transport, mode="auto") as client:
                assert client.protocol_version == "2026-07-28"
                assert (await client.list_tools()).tools == []
                assert len(server.runtime.sessions) == 0


# --- a client that stops reading ---------------------------------------------------------


async def test_a_stalled_reader_is_disconnected_and_its_session_freed(tmp_path: Path) -> None:
    env = {"AGENTWS_SSE_STALL_S": "1", "AGENTWS_SSE_KEEPALIVE_S": "60"}
    async with running(tmp_path, **env) as server, _http() as http:
        library = await server.store.find(Library, slug="handbook")
        assert library is not None
        await server.store.insert(
            ContextDocument(library_id=library.id, slug="big", title="Big", body="x" * 100_000)
        )
        async with legacy_stream(server) as (session_id, _never_read):
            messages = f"{server.url}/messages?session_id={session_id}"
            for message in (INITIALIZE, _rpc("notifications/initialized", None)):
                accepted = await http.post(messages, json=message, headers=server.headers())
                assert accepted.status_code == 202
            # Each answer is ~100 KB and nobody reads them: the socket buffers
            # fill, then the session's bounded channel, then the reader is cut off.
            read_big = _rpc(
                "tools/call",
                name="read_context_document",
                arguments={"uri": "agentws://handbook/big", "length": 100_000},
            )
            statuses: list[int] = []
            with trio.fail_after(30):
                while True:
                    response = await http.post(messages, json=read_big, headers=server.headers())
                    statuses.append(response.status_code)
                    if response.status_code != 202:
                        break
            assert statuses[-1] == 404, statuses[-3:]
            assert len(statuses) > 20
            await wait_for(lambda: server.runtime.sessions.get(session_id) is None, what="freed")
            # The connection itself is dropped, not just the session.
            await wait_for(_never_read.dropped_by_server, timeout_s=REQUEST_S, what="the drop")
        # Other clients were never affected.
        async with sdk_session(server, "streamable") as session:
            assert len((await session.list_tools()).tools) == 2


async def test_agentws_token_revoke_in_another_process_closes_the_stream(tmp_path: Path) -> None:
    database_url = f"sqlite:///{tmp_path / 'revoke.db'}"
    async with (
        running(tmp_path, with_library=False, database_url=database_url) as server,
        legacy_stream(server) as (session_id, stream),
    ):
        revoke = await trio.run_process(
            [sys.executable, "-m", "agentws", "token", "revoke", "acme", "ops", "tests"],
            env=clean_env(AGENTWS_DATABASE_URL=database_url),
            capture_stdout=True,
            capture_stderr=True,
        )
        revoked_at = trio.current_time()
        assert revoke.stdout.decode().startswith("Revoked token 'tests'")
        with trio.fail_after(REQUEST_S):
            await stream.read_to_end()
        assert trio.current_time() - revoked_at < REVOCATION_S
        assert server.runtime.sessions.get(session_id) is None


async def test_idle_streams_get_keep_alive_comments(tmp_path: Path) -> None:
    env = {"AGENTWS_SSE_KEEPALIVE_S": "0.2"}
    async with (
        running(tmp_path, with_library=False, **env) as server,
        legacy_stream(server) as (
            _,
            stream,
        ),
    ):
        with trio.fail_after(REQUEST_S):
            # A comment line, never a named event (named keep-alives break clients).
            assert await stream.read_line() == ": ping"
            assert await stream.read_line() == ""
            assert await stream.read_line() == ": ping"
