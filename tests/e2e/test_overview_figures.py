"""The overview's figures of a serving agentws, checked exactly against a known workload.

A real agentws serves on loopback with its model at a fake Messages API (it
fails the events that ask for it) and a real third-party MCP server as the
group's connector. The test delivers N events to one webhook and M that
fail to another, sends R deliveries with a wrong secret, and makes K tool
calls over MCP (the SDK's client) that the gate runs, queues, runs after
a confirmation and denies; then ``read_overview`` reads them back at once,
for every range: the last point is the minute going on, taken from the
source tables (the rollup of closed minutes runs once a minute).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import trio
from cryptography.fernet import Fernet
from mcp.shared.exceptions import MCPError

from agentws.domain.models import Capability, EventStatus, VerificationScheme
from agentws.domain.rules import utcnow
from agentws.rollups import read_overview
from agentws.rollups.minutes import MinuteRollup
from agentws.service import _session_transports
from agentws.settings.secret_box import ensure_key_file
from agentws.store.union import Store
from agentws.workspaces.admin import create_token
from tests.e2e.fake_anthropic import API_KEY, Failure, Reply, Turn, fake_anthropic
from tests.e2e.mcp_support import Running, running, sdk_session
from tests.e2e.polling import wait_until
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    TIMEOUT_S,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.e2e.run_support import MODEL, deliver, finished, hook
from tests.e2e.webhook_support import post

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

N_DONE, M_FAILED, R_REFUSED = 4, 2, 3
SECRET = "overview-secret-4f1c"
# What the fake API counts for each successful turn (tests/e2e/fake_anthropic.py).
INPUT_PER_TURN, OUTPUT_PER_TURN = 100 + 0 + 80, 20


def _script(request: dict[str, Any]) -> Reply:
    if "please-fail" in json.dumps(request):
        return Failure(400, "the request was refused (a test)")
    return Turn("All is well.")


@asynccontextmanager
async def served(tmp_path: Path) -> AsyncIterator[tuple[Running, ThirdParty]]:
    ensure_key_file(tmp_path)
    state = ThirdParty(
        [
            tool("search", "Search", read_only_hint=True),
            tool("send", "Send a message"),
            tool("drop", "Drop the table", destructive_hint=True),
        ]
    )
    async with fake_anthropic(_script) as fake:
        settings = {
            "AGENTWS_SECRET_KEY": Fernet.generate_key().decode(),
            "AGENTWS_MODEL": MODEL,
            "ANTHROPIC_API_KEY": API_KEY,
            "ANTHROPIC_BASE_URL": fake.base_url,
            "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
            "AGENTWS_TOOL_TIMEOUT_S": "10",
            "AGENTWS_CONNECTOR_REFRESH_S": "0",
        }
        async with (
            running(tmp_path, with_library=False, **settings) as server,
            third_party_server(state) as url,
        ):
            labels = {"third_search": Capability.READ, "third_drop": Capability.DESTRUCTIVE}
            await attach_remote(server.store, url, labels)
            yield server, state


async def _accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"confirm": True})


async def _tool_calls(server: Running) -> None:
    """Two reads that run, a write queued, a destructive call confirmed, one denied."""
    lead = await create_token(
        server.store, "acme", "ops", name="lead", scope=Capability.DESTRUCTIVE, actor="t"
    )
    reader = await create_token(
        server.store, "acme", "ops", name="reader", scope=Capability.READ, actor="t"
    )
    async with sdk_session(
        server, "streamable", token=lead.secret, elicitation_callback=_accept
    ) as session:
        with trio.fail_after(TIMEOUT_S):
            for q in ("a", "b"):
                assert not (await session.call_tool("third_search", {"q": q})).is_error
            queued = await session.call_tool("third_send", {"q": "c"})
            assert (queued.structured_content or {})["status"] == "queued", queued
            assert not (await session.call_tool("third_drop", {"q": "d"})).is_error
    async with sdk_session(server, "sse", token=reader.secret) as session:
        with trio.fail_after(TIMEOUT_S), pytest.raises(MCPError):
            await session.call_tool("third_send", {"q": "e"})


async def _overview(store: Store, range_name: str) -> dict[str, Any]:
    workspace = await store.workspace_by_slug("acme")
    return await read_overview(store, workspace.id, range_name)


async def test_the_overview_counts_a_known_workload_exactly(tmp_path: Path) -> None:
    async with served(tmp_path) as (server, state):
        store = server.store
        ok, failing = await hook(server, "deploys"), await hook(server, "alerts")
        guarded = await hook(
            server, "guarded", verification=VerificationScheme.SHARED_SECRET, secret=SECRET
        )
        done = [await deliver(ok, {"n": n}) for n in range(N_DONE)]
        failed = [
            await deliver(failing, {"outcome": "please-fail", "n": n}) for n in range(M_FAILED)
        ]
        for event_id in done:
            assert (await finished(store, event_id)).status is EventStatus.DONE
        for event_id in failed:
            assert (await finished(store, event_id)).status is EventStatus.FAILED
        for n in range(R_REFUSED):
            refused = await post(guarded.url, b'{"n": %d}' % n, {"X-Webhook-Secret": "wrong"})
            assert refused.status_code == 401, refused.text
        await _tool_calls(server)
        assert state.calls == ["search", "search", "drop"]

        # The refusals' rows are written by the delivery log's flusher: wait for them only.
        answer = await wait_until(
            lambda: _overview(store, "1h"),
            lambda a: a["totals"]["refused"] >= R_REFUSED and a["totals"]["tool_calls"] >= 5,
            timeout_s=10,
            what="the refusals and the tool calls to be stored",
        )
        totals = answer["totals"]
        assert totals["events_received"] == N_DONE + M_FAILED
        assert totals["events_done"] == N_DONE
        assert totals["events_failed"] == M_FAILED
        assert totals["refused"] == R_REFUSED
        assert totals["tool_calls"] == 5
        assert totals["model_tokens"] == N_DONE * (INPUT_PER_TURN + OUTPUT_PER_TURN)
        assert totals["approvals_depth"] == 1
        p50, p99 = totals["latency_p50_ms"], totals["latency_p99_ms"]
        assert p50 is not None and p99 is not None
        assert 0 < p50 <= p99 < 10_000
        series = answer["series"]
        assert sum(series["events_received"]["deploys"]) == N_DONE
        assert sum(series["events_received"]["alerts"]) == M_FAILED
        assert sum(series["events_received"]["guarded"]) == 0
        assert sum(series["events_done"]["deploys"]) == N_DONE
        assert sum(series["events_failed"]["alerts"]) == M_FAILED
        assert sum(series["events_failed"]["deploys"]) == 0
        assert {k: sum(v) for k, v in series["refused"].items()} == {"invalid_signature": R_REFUSED}
        assert {k: sum(v) for k, v in series["tool_calls"].items()} == {
            "ran": 2,
            "queued": 1,
            "confirmed": 1,
            "denied": 1,
        }
        assert {k: sum(v) for k, v in series["model_tokens"].items()} == {
            "input": N_DONE * INPUT_PER_TURN,
            "output": N_DONE * OUTPUT_PER_TURN,
        }
        assert series["approvals"]["depth"][-1] == 1
        assert series["latency_ms"]["p99"][-2:] != [None, None]
        for name in ("24h", "7d"):
            wide = await _overview(store, name)
            assert wide["totals"] == {**totals, "latency_p50_ms": p50, "latency_p99_ms": p99}


async def test_open_sessions_are_sampled_by_transport(tmp_path: Path) -> None:
    # The service's rollup samples the sessions it holds once a minute; here one
    # round samples them now, as the service's task would, from the real supervisor.
    async with running(tmp_path) as server:
        workspace = await server.store.workspace_by_slug("acme")
        rollup = MinuteRollup(
            server.store,
            server.runtime.settings.instance_id,
            8,
            sessions=lambda: _session_transports(server.runtime.sessions),
        )
        async with (
            sdk_session(server, "streamable") as first,
            sdk_session(server, "streamable") as second,
            sdk_session(server, "sse") as third,
        ):
            for session in (first, second, third):
                await session.list_tools()
            assert sorted(_session_transports(server.runtime.sessions)) == [
                (workspace.id, "sse"),
                (workspace.id, "streamable"),
                (workspace.id, "streamable"),
            ]
            await rollup.sample(utcnow())
            answer = await _overview(server.store, "1h")
        assert answer["series"]["sessions"]["streamable"][-1] == 2
        assert answer["series"]["sessions"]["sse"][-1] == 1
        assert answer["totals"]["sessions"] == 3
