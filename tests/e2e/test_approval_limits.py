"""Limits of the approval queue, through both doors that queue calls.

One caller must not be able to fill the queue (and the approvals page)
with calls no one can read: a queued call's arguments are capped
(``AGENTWS_APPROVAL_MAX_ARGUMENT_BYTES``), and so are the calls one token,
or one webhook's runs, may have waiting (``AGENTWS_APPROVAL_MAX_PENDING_PER_TOKEN``).
A call over either limit is refused with a tool error naming the limit and
its value, and nothing is stored; a decision frees a place.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from agentws.agent.model import ModelReply, ModelRequest, ToolCall
from agentws.approvals import decisions
from agentws.domain.models import Approval, AuditEntry, EventAttempt, EventStatus
from agentws.settings.config import Settings
from tests.e2e.loop_steps import watch_steps
from tests.e2e.mcp_support import running, sdk_session
from tests.e2e.polling import wait_until
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    Outcomes,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.e2e.run_support import deliver, finished, hook
from tests.e2e.test_webhook_runs import ScriptedModel, served

LIMITS = {
    "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
    "AGENTWS_CONNECTOR_REFRESH_S": "0",
    "AGENTWS_APPROVAL_MAX_ARGUMENT_BYTES": "2048",
    "AGENTWS_APPROVAL_MAX_PENDING_PER_TOKEN": "3",
}


def _text(result: Any) -> str:
    return " ".join(c.text for c in result.content if getattr(c, "text", None))


def test_the_limits_default_to_256_kib_and_100_calls() -> None:
    settings = Settings.from_env({})
    assert settings.approval_max_argument_bytes == 256 * 1024
    assert settings.approval_max_pending_per_token == 100


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_an_mcp_token_cannot_queue_huge_or_endless_calls(tmp_path: Path) -> None:
    state = ThirdParty([tool("send", "Send a page")])
    async with running(tmp_path, **LIMITS) as server, third_party_server(state) as url:
        await attach_remote(server.store, url, {})  # unlabeled: a write, approval first
        async with sdk_session(server, "streamable") as session:
            huge = await session.call_tool("third_send", {"q": "x" * 4096})
            assert huge.is_error
            message = _text(huge)
            assert "third_send was not queued" in message
            assert "AGENTWS_APPROVAL_MAX_ARGUMENT_BYTES" in message and "2,048 bytes" in message
            assert await server.store.count(Approval) == 0

            queued = [await session.call_tool("third_send", {"q": f"page {n}"}) for n in range(3)]
            assert [(r.structured_content or {}).get("status") for r in queued] == ["queued"] * 3
            over = await session.call_tool("third_send", {"q": "one more"})
            assert over.is_error
            message = _text(over)
            assert "this token already has 3 calls waiting" in message
            assert "AGENTWS_APPROVAL_MAX_PENDING_PER_TOKEN" in message
            assert await server.store.count(Approval) == 3

            # A decision frees a place.
            first = (queued[0].structured_content or {})["approval_id"]
            await decisions.deny(server.store, first, actor="admin:alice", reason=None)
            again = await session.call_tool("third_send", {"q": "one more"})
            assert not again.is_error, _text(again)
        assert await server.store.count(Approval) == 4
        # Each refusal is audited like any call (the audit log is written in batches).
        entries = await wait_until(
            lambda: server.store.select(AuditEntry, action="tool.call"),
            lambda entries: [e.detail["outcome"] for e in entries].count("not_queued") == 2,
            timeout_s=5.0,
            what="both refusals in the audit log",
        )
        reasons = [e.detail["reason"] for e in entries if e.detail["outcome"] == "not_queued"]
        assert "AGENTWS_APPROVAL_MAX_ARGUMENT_BYTES" in reasons[0]
        assert "AGENTWS_APPROVAL_MAX_PENDING_PER_TOKEN" in reasons[1]
        # The huge arguments are audited by size only.
        assert entries[0].detail["arguments_bytes"] > 4096
    assert state.calls == []


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_a_webhook_run_is_held_to_the_same_limits(tmp_path: Path) -> None:
    state = ThirdParty([tool("send", "Send a page")])
    turns = itertools.count()

    def script(request: ModelRequest) -> ModelReply:
        if next(turns) == 0:
            calls = [ToolCall(f"c{n}", "third_send", {"q": f"page {n}"}) for n in range(4)]
            calls.append(ToolCall("big", "third_send", {"q": "x" * 4096}))
            return ModelReply(text="Paging.", tool_calls=tuple(calls))
        return ModelReply(text="Some pages wait for approval.")

    async with (
        served(tmp_path, ScriptedModel(script), **LIMITS) as server,
        third_party_server(state) as url,
    ):
        await attach_remote(server.store, url, {})
        event_id = await deliver(await hook(server, group="ops"), {"event": "outage"})
        assert (await finished(server.store, event_id)).status is EventStatus.DONE
        assert await server.store.count(Approval) == 3
        (attempt,) = await server.store.select(EventAttempt, event_id=event_id)
        outcomes = {c["id"]: c for c in attempt.tool_calls["calls"]}
        assert [outcomes[f"c{n}"]["outcome"] for n in range(4)] == ["queued"] * 3 + ["error"]
        assert "this webhook's runs already have 3 calls waiting" in outcomes["c3"]["result"]
        assert "AGENTWS_APPROVAL_MAX_PENDING_PER_TOKEN" in outcomes["c3"]["result"]
        assert outcomes["big"]["outcome"] == "error"
        assert "AGENTWS_APPROVAL_MAX_ARGUMENT_BYTES" in outcomes["big"]["result"]
    assert state.calls == []


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_a_session_awaiting_a_full_queue_costs_the_loop_little(tmp_path: Path) -> None:
    # The most calls one token may queue, each with the largest arguments, in
    # the costliest shape to read back: the watch that tells the session their
    # outcomes used to read every one of them back, four times a second.
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
    state = ThirdParty([tool("send", "Send a page")])
    outcomes = Outcomes()
    async with running(tmp_path, **env) as server, third_party_server(state) as url:
        await attach_remote(server.store, url, {})  # unlabeled: a write, approval first
        settings = server.runtime.settings
        members = settings.approval_max_argument_bytes // 14 - 100
        async with sdk_session(server, "streamable", logging_callback=outcomes) as session:
            ids = []
            with watch_steps() as steps:
                for n in range(settings.approval_max_pending_per_token):
                    arguments = {f"k{m:07d}": n for m in range(members)}
                    queued = await session.call_tool("third_send", arguments)
                    ids.append((queued.structured_content or {})["approval_id"])
                # The round that finds it decided looks at all the others too.
                await decisions.deny(server.store, ids[-1], actor="admin:alice", reason="no")
                told = await outcomes.wait(ids[-1])
            assert told["status"] == "denied"
            steps.assert_none_long()
