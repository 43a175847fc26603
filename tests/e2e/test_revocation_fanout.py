"""Revoking a token from another process closes every session of it, and only those.

``agentws token revoke`` runs as its own process, as an operator runs it,
against the SQLite file or the PostgreSQL schema the server serves from.
The token holds several sessions of both transports (legacy SSE streams,
Streamable HTTP sessions with their ``GET`` stream); another token of the
same group holds sessions too. Every stream of the revoked token ends, its
sessions are gone, and the other token's sessions stay open and answer.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
import trio

from agentws.workspaces.admin import create_token
from tests.e2e.mcp_support import REQUEST_S, Running, legacy_stream, raw_request, running
from tests.support import clean_env, migrated_schema

# How long the streams may take to end: far more than it takes, so a slow
# machine does not fail the test; a session that never closes still does.
PATIENCE_S = 30.0
ACCEPT = "application/json, text/event-stream"
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
# Sessions of each transport the revoked token holds.
EACH = 4


@contextlib.asynccontextmanager
async def _database(store: str, tmp_path: Path) -> AsyncIterator[str]:
    if store == "sqlite":
        yield f"sqlite:///{tmp_path / 'revoke.db'}"
    else:
        async with migrated_schema() as url:
            yield url


async def _initialize(http: httpx2.AsyncClient, server: Running, token: str) -> str:
    headers = {**server.headers(token), "Accept": ACCEPT}
    response = await http.post(server.url, json=INITIALIZE, headers=headers)
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    initialized = await http.post(
        server.url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={**headers, "Mcp-Session-Id": session_id},
    )
    assert initialized.status_code == 202
    return session_id


class _Held:
    """Streams held open; which of them have ended."""

    def __init__(self, server: Running, http: httpx2.AsyncClient) -> None:
        self.server = server
        self.http = http
        self.ended: dict[str, trio.Event] = {}

    async def legacy(self, token: str, *, task_status: trio.TaskStatus[str]) -> None:
        async with legacy_stream(self.server, token) as (session_id, stream):
            self.ended[session_id] = trio.Event()
            task_status.started(session_id)
            await stream.read_to_end()
        self.ended[session_id].set()

    async def streamable(self, token: str, *, task_status: trio.TaskStatus[str]) -> None:
        session_id = await _initialize(self.http, self.server, token)
        headers = {
            **self.server.headers(token),
            "Accept": "text/event-stream",
            "Mcp-Session-Id": session_id,
        }
        path = self.server.url.removeprefix(self.server.base_url)
        async with raw_request(self.server, "GET", path, headers) as response:
            assert response.status == 200
            self.ended[session_id] = trio.Event()
            task_status.started(session_id)
            await response.read_to_end()
        self.ended[session_id].set()


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_the_cli_revoking_a_token_closes_all_its_sessions_and_no_other(
    tmp_path: Path, store: str
) -> None:
    async with (
        _database(store, tmp_path) as database_url,
        running(tmp_path, with_library=False, database_url=database_url) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
        trio.open_nursery() as nursery,
    ):
        kept = await create_token(server.store, "acme", "ops", name="kept", actor="t")
        held = _Held(server, http)
        revoked: list[str] = []
        with trio.fail_after(PATIENCE_S):
            for _ in range(EACH):
                revoked.append(await nursery.start(held.legacy, server.token))
                revoked.append(await nursery.start(held.streamable, server.token))
            kept_ids = [
                await nursery.start(held.legacy, kept.secret),
                await nursery.start(held.streamable, kept.secret),
            ]
        revoked_token = server.runtime.sessions.get(revoked[0])
        assert revoked_token is not None
        assert len(server.runtime.sessions.sessions_of(revoked_token.token_id)) == 2 * EACH

        done = await trio.run_process(
            [sys.executable, "-m", "agentws", "token", "revoke", "acme", "ops", "tests"],
            env=clean_env(AGENTWS_DATABASE_URL=database_url),
            capture_stdout=True,
            capture_stderr=True,
        )
        assert done.stdout.decode().startswith("Revoked token 'tests'")

        with trio.fail_after(PATIENCE_S):
            for session_id in revoked:
                await held.ended[session_id].wait()
        assert server.runtime.sessions.sessions_of(revoked_token.token_id) == []
        assert all(server.runtime.sessions.get(s) is None for s in revoked)

        # The other token's sessions are open, their streams too, and they answer.
        assert all(server.runtime.sessions.get(s) is not None for s in kept_ids)
        assert not any(held.ended[s].is_set() for s in kept_ids)
        ping = await http.post(
            server.url,
            json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
            headers={
                **server.headers(kept.secret),
                "Accept": ACCEPT,
                "Mcp-Session-Id": kept_ids[1],
            },
        )
        assert ping.status_code == 200, ping.text
        assert ping.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        nursery.cancel_scope.cancel()
