"""MCP clients through nginx in front of two agentws instances on PostgreSQL.

nginx, configured as ``deploy/nginx-agentws.conf`` (see
:mod:`tests.e2e.nginx_support`), routes requests that name an MCP session
to the session's owner and the rest to either instance; MCP clients over
both transports work through it, with their sessions spread over both
instances; a client of the stateless revision (2026-07-28) has each of its
requests answered by whichever instance nginx picks.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from agentws.store import open_store
from tests.e2e.mcp_support import MODERN, seed
from tests.e2e.nginx_support import access_log, behind_nginx
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS
from tests.support import migrated_schema

pytestmark = [pytest.mark.postgres, pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)]


async def test_mcp_clients_over_both_transports_through_nginx(tmp_path: Path) -> None:
    async with migrated_schema() as url:
        async with open_store(url) as store:
            token, _ = await seed(store, tmp_path, with_library=True)
        headers = {"Authorization": f"Bearer {token}"}
        async with behind_nginx(tmp_path, url) as (a, b, nginx):
            endpoint = f"{nginx}/mcp/g/acme/ops"
            for _ in range(4):
                async with (
                    httpx2.AsyncClient(headers=headers, timeout=10) as http,
                    streamable_http_client(endpoint, http_client=http) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    # Every request of the session reaches its owner, whichever nginx picked.
                    for _ in range(3):
                        listed = await session.list_tools()
                        assert "search_context" in {t.name for t in listed.tools}
                    found = await session.call_tool("search_context", {"query": "refund"})
                    assert not found.is_error
            # nginx spread the sessions over both instances (each logs the ones it opens).
            opened = {s.process.pid: s.stderr().count(" opened (streamable)") for s in (a, b)}
            assert all(n >= 1 for n in opened.values()), opened

            for _ in range(2):
                async with (
                    sse_client(endpoint, headers=headers) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    for _ in range(3):
                        listed = await session.list_tools()
                        assert "search_context" in {t.name for t in listed.tools}

    # nginx sent every request that names a session to the session's owner
    # itself (none needed forwarding between instances), and all succeeded.
    owners = {"inst-a": a, "inst-b": b}
    requests = access_log(tmp_path)
    with_session = [r for r in requests if r.session_id is not None]
    assert len(with_session) >= 4 * 4 + 2 * 3, requests  # the calls above, at least
    for request in with_session:
        owner = owners[request.session_id.partition(".")[0]]
        assert len(request.upstreams) == 1 and request.answered_by(owner), request
    failed = [r for r in requests if not 200 <= r.status < 300]
    assert not failed, failed


async def test_modern_clients_need_no_sticky_routing(tmp_path: Path) -> None:
    """2026-07-28 requests carry no session: nginx's round robin spreads them freely."""
    async with migrated_schema() as url:
        async with open_store(url) as store:
            token, _ = await seed(store, tmp_path, with_library=True)
        headers = {"Authorization": f"Bearer {token}"}
        async with behind_nginx(tmp_path, url) as (a, b, nginx):
            endpoint = f"{nginx}/mcp/g/acme/ops"
            async with (
                httpx2.AsyncClient(headers=headers, timeout=10) as http,
                Client(streamable_http_client(endpoint, http_client=http), mode=MODERN) as client,
            ):
                for _ in range(4):
                    listed = await client.list_tools(cache_mode="bypass")
                    assert "search_context" in {t.name for t in listed.tools}
                    found = await client.call_tool("search_context", {"query": "refund"})
                    assert not found.is_error
            # No instance opened a session for them.
            assert all(" opened (" not in s.stderr() for s in (a, b))

    requests = [r for r in access_log(tmp_path) if r.method == "POST"]
    assert len(requests) == 8, requests
    assert all(r.session_id is None and r.status == 200 for r in requests), requests
    # Both instances answered some of one client's requests.
    assert all(any(r.answered_by(s) for r in requests) for s in (a, b)), requests
