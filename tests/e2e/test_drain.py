"""Draining before shutdown (``AGENTWS_DRAIN_S``): not ready, no new session, the open ones go on.

``agentws serve`` runs as its own process and gets SIGTERM, as from a
process manager during a rolling restart behind a load balancer.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx2
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentws.store import open_store
from tests.e2e.mcp_support import seed
from tests.e2e.process_support import serve_process
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS

DRAIN_S = 30.0
GRACE_S = 3.0


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_a_draining_instance_finishes_its_sessions_and_takes_no_new_one(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'drain.db'}"
    async with open_store(url) as store:
        token, _ = await seed(store, tmp_path, with_library=True)
    env = {"AGENTWS_DRAIN_S": str(DRAIN_S), "AGENTWS_SHUTDOWN_GRACE_S": str(GRACE_S)}
    async with serve_process(tmp_path, url, "drain-a", **env) as server:
        endpoint = f"{server.base_url}/mcp/g/acme/ops"
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=10) as http,
            streamable_http_client(endpoint, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            server.process.send_signal(signal.SIGTERM)

            async with httpx2.AsyncClient(timeout=5) as probe:
                with trio.fail_after(5):
                    while True:
                        ready = await probe.get(f"{server.base_url}/readyz")
                        if ready.status_code == 503:
                            break
                        await trio.sleep(0.02)
                assert ready.json()["detail"] == "draining"
                initialize = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "late", "version": "1"},
                    },
                }
                refused = await probe.post(
                    endpoint,
                    content=json.dumps(initialize),
                    headers={
                        **headers,
                        "Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream",
                    },
                )
                assert refused.status_code == 503
                assert refused.headers["retry-after"] == "1"
                assert "draining" in refused.text

            # The open session goes on while the instance drains.
            listed = await session.list_tools()
            assert "search_context" in {t.name for t in listed.tools}
            assert server.process.returncode is None
        # The client closed its session: nothing is left to drain.
        closed_at = trio.current_time()
        with trio.fail_after(GRACE_S + 5):
            assert await server.process.wait() == 0
        assert trio.current_time() - closed_at < DRAIN_S / 2
    assert "draining: up to 30 s for 1 MCP session(s) to end" in server.stderr()
