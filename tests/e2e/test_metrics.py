"""``/metrics`` after a scripted workload: the counters moved as the workload says.

A serving agentws (the real ``anthropic`` SDK against a fake Messages API
that reports token usage) takes three webhook deliveries and one bad one,
runs them, holds an MCP session that calls a read tool, is sent a wrong
token, and has one call waiting for approval. The page, scraped before and
after with its token, shows each of these in its metric, and the page asks
for the token.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx2
from prometheus_client.parser import text_string_to_metric_families

from agentws.domain.models import Approval, Capability, McpToken, arguments_hash
from agentws.domain.rules import utcnow
from tests.e2e.fake_anthropic import Turn
from tests.e2e.mcp_support import Running, sdk_session
from tests.e2e.run_support import deliver, finished, hook, served
from tests.e2e.webhook_support import post

METRICS_TOKEN = "metrics-secret-for-tests"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t"}},
}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def _scrape(http: httpx2.AsyncClient, server: Running) -> Samples:
    response = await http.get(
        f"{server.base_url}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def _queue_an_approval(server: Running, age: timedelta) -> None:
    group = await server.store.group_by_slug("acme", "ops")
    token = await server.store.find(McpToken, name="tests")
    assert token is not None
    await server.store.insert(
        Approval(
            group_id=group.id,
            token_id=token.id,
            requested_by=f"mcp:{token.id}",
            tool_name="third_send",
            capability=Capability.WRITE,
            definition_hash="d" * 64,
            arguments={},
            arguments_hash=arguments_hash("third_send", {}),
            created_at=utcnow() - age,
            expires_at=utcnow() + timedelta(hours=1),
        )
    )


async def test_metrics_move_as_a_scripted_workload_says(tmp_path: Path) -> None:
    replies = [Turn(f"Summary {n}.") for n in range(3)]
    async with (
        served(tmp_path, replies, with_library=True, AGENTWS_METRICS_TOKEN=METRICS_TOKEN) as (
            server,
            _,
        ),
        httpx2.AsyncClient(timeout=10) as http,
    ):
        refused = await http.get(f"{server.base_url}/metrics")
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
        wrong = await http.get(
            f"{server.base_url}/metrics", headers={"Authorization": "Bearer nope"}
        )
        assert wrong.status_code == 401
        before = await _scrape(http, server)

        issued = await hook(server)
        event_ids = [await deliver(issued, {"deploy": n}) for n in range(3)]
        assert (await post(issued.url, b"{not json")).status_code == 400
        for event_id in event_ids:
            assert (await finished(server.store, event_id)).status.value == "done"
        await _queue_an_approval(server, timedelta(minutes=2))
        unauthorized = await http.post(
            server.url,
            json=INITIALIZE,
            headers={"Authorization": "Bearer agws_wrong", "Accept": "application/json"},
        )
        assert unauthorized.status_code == 401
        async with sdk_session(server, "streamable") as session:
            found = await session.call_tool("search_context", {"query": "refund"})
            assert not found.is_error
            during = await _scrape(http, server)
        after = await _scrape(http, server)

    def moved(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    # Webhooks: three accepted, one refused as invalid JSON, three runs done.
    assert moved("agentws_webhook_deliveries_total", outcome="queued") == 3
    assert moved("agentws_webhook_deliveries_total", outcome="refused") == 1
    assert moved("agentws_rejected_requests_total", door="webhook", reason="invalid_json") == 1
    assert moved("agentws_webhook_ingest_seconds_count") == 3
    assert moved("agentws_webhook_run_seconds_count", outcome="done") == 3
    assert _value(after, "agentws_webhook_events", status="done") == 3
    assert _value(after, "agentws_webhook_events", status="queued") == 0
    # The fake API counts tokens for each of the three replies.
    assert moved("agentws_model_tokens_total", kind="input") > 0
    assert moved("agentws_model_tokens_total", kind="output") > 0
    # MCP: a read tool ran, a wrong token was refused, a session was open while scraped.
    assert moved("agentws_tool_calls_total", capability="read", decision="run") == 1
    assert moved("agentws_rejected_requests_total", door="mcp", reason="unauthorized") == 1
    assert _value(during, "agentws_mcp_sessions", transport="streamable") == 1
    assert _value(after, "agentws_mcp_sessions", transport="streamable") == 0
    # The approval queue: one waiting, two minutes old.
    assert _value(after, "agentws_approvals_pending") == 1
    assert 110 <= _value(after, "agentws_approvals_oldest_pending_seconds") <= 600
    # The store was timed, and the process collector is there.
    assert moved("agentws_store_seconds_count", operation="read") > 0
    assert _value(after, "process_resident_memory_bytes") > 0
