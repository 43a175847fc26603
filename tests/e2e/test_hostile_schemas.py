"""A remote's hostile tool schemas, and arguments made to exploit them, never stall the service.

A remote MCP server decides its tools' JSON Schemas; a caller decides the
arguments. Checking one against the other used to run on the event loop
with quadratic ``uniqueItems`` and backtracking regular expressions: one
call froze every request of the process, and SIGTERM with them. Each call
below must answer with a clear tool error while ``/healthz`` keeps
answering, and a served process must still exit cleanly on SIGTERM with
such calls in flight.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import httpx2
import mcp_types as types
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from benchlib.hostile_upstream import PAYLOADS, TOOLS

from agentws.connectors.admin import attach_connector
from agentws.connectors.remote_mcp import fetch_tools, remote_deadline
from agentws.domain.models import Approval, AuditEntry
from agentws.store import open_store
from agentws.tools.cache_sync import sync_tool_cache
from tests.e2e.mcp_support import running, sdk_session, seed
from tests.e2e.polling import wait_until
from tests.e2e.process_support import serve_process
from tests.e2e.remote_support import (
    LOOPBACK,
    SDK_CLIENT_WARNINGS,
    TIMEOUT_S,
    ThirdParty,
    add_remote,
    third_party_server,
)

ALLOW = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
# Far longer than any of these calls takes now, far shorter than any took before.
CALL_S = 10.0


HOSTILE = TOOLS
DISTINCT = PAYLOADS["unique"]
BACKTRACKING = PAYLOADS["pattern"]


def _text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def _healthy_throughout(base_url: str, done: trio.Event, answered: list[float]) -> None:
    """Ask ``/healthz`` again and again until ``done``; each must answer promptly."""
    async with httpx2.AsyncClient(timeout=CALL_S) as client:
        while not done.is_set():
            started = trio.current_time()
            with trio.fail_after(2.0):
                response = await client.get(f"{base_url}/healthz")
            assert response.status_code == 200
            answered.append(trio.current_time() - started)
            await trio.sleep(0.01)


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_hostile_schemas_answer_at_once_and_the_loop_stays_free(tmp_path: Path) -> None:
    state = ThirdParty(list(HOSTILE))
    async with running(tmp_path, **ALLOW) as server, third_party_server(state) as url:
        connector = await add_remote(server.store, url)
        with remote_deadline(connector, TIMEOUT_S):
            tools = await fetch_tools(connector, box=None, allowlist=LOOPBACK)
        await sync_tool_cache(server.store, connector, tools, actor="t")
        await attach_connector(server.store, "acme", "ops", "third", actor="t")
        done = trio.Event()
        answered: list[float] = []
        results: dict[str, types.CallToolResult] = {}
        async with sdk_session(server, "streamable") as session, trio.open_nursery() as nursery:
            nursery.start_soon(_healthy_throughout, server.base_url, done, answered)
            for name, arguments in [
                ("third_unique", DISTINCT),
                ("third_pattern", BACKTRACKING),
                ("third_branches", {"v": 5}),
            ]:
                with trio.fail_after(CALL_S):
                    results[name] = await session.call_tool(name, arguments)
            done.set()
        assert answered, "/healthz was never asked"
        # Valid but over the queue's limit: refused by size, not after minutes of checking.
        unique = results["third_unique"]
        assert unique.is_error and "AGENTWS_APPROVAL_MAX_ARGUMENT_BYTES" in _text(unique)
        pattern = results["third_pattern"]
        assert pattern.is_error
        assert _text(pattern).startswith("Invalid arguments for third_pattern: q: ")
        assert "does not match" in _text(pattern)
        # Whatever the checker makes of it, the caller hears why the call did not run.
        branches = results["third_branches"]
        assert branches.is_error
        assert _text(branches).startswith("Invalid arguments for third_branches: "), _text(branches)
        assert await server.store.count(Approval) == 0
        # Caching them flagged the one schema whose checks cannot be bounded on the loop.
        flagged = await server.store.select(AuditEntry, action="tool.schema_flagged")
        assert [e.target for e in flagged] == ["third_branches"]
    assert state.calls == []


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_sigterm_ends_a_process_flooded_with_hostile_calls(tmp_path: Path) -> None:
    state = ThirdParty(list(HOSTILE))
    database = f"sqlite:///{tmp_path / 'hostile.db'}"
    async with third_party_server(state) as url:
        async with open_store(database) as store:
            token, _ = await seed(store, tmp_path, with_library=False)
            connector = await add_remote(store, url)
            with remote_deadline(connector, TIMEOUT_S):
                tools = await fetch_tools(connector, box=None, allowlist=LOOPBACK)
            await sync_tool_cache(store, connector, tools, actor="t")
            await attach_connector(store, "acme", "ops", "third", actor="t")
        env = {**ALLOW, "AGENTWS_SHUTDOWN_GRACE_S": "2"}
        async with serve_process(tmp_path, database, "hostile", **env) as server:
            endpoint = f"{server.base_url}/mcp/g/acme/ops"
            answered, terminated = trio.Event(), trio.Event()

            async def flood() -> None:
                headers = {"Authorization": f"Bearer {token}"}
                try:
                    async with (
                        httpx2.AsyncClient(headers=headers, timeout=CALL_S) as http,
                        streamable_http_client(endpoint, http_client=http) as (read, write),
                        ClientSession(read, write) as session,
                    ):
                        await session.initialize()
                        while True:
                            await session.call_tool("third_pattern", BACKTRACKING)
                            answered.set()
                except Exception:
                    # The process going away ends the flood; before that, nothing may fail.
                    if not terminated.is_set():
                        raise

            with trio.fail_after(CALL_S):
                async with trio.open_nursery() as nursery:
                    for _ in range(3):
                        nursery.start_soon(flood)
                    # Once the process answers one, the others keep coming.
                    await answered.wait()
                    terminated.set()
                    server.process.send_signal(signal.SIGTERM)
                    code = await server.process.wait()
                    nursery.cancel_scope.cancel()
            assert code == 0, server.stderr()
        async with open_store(database) as store:
            entries = await wait_until(
                lambda: store.select(AuditEntry, action="tool.call"),
                lambda entries: bool(entries),
                what="the hostile call in the audit log",
            )
            assert entries[0].detail["outcome"] == "invalid_arguments"
