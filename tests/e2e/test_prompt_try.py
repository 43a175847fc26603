"""Try a prompt: the agent on a sample or a past event, with the real model client, posting nothing.

The model is the ``anthropic`` SDK against a fake Messages API on loopback
(:mod:`tests.e2e.fake_anthropic`) that asks for a read tool, a write tool
and a destructive tool of a third-party MCP server (the ``mcp`` SDK's own
server, :mod:`tests.e2e.remote_support`), which records every call it
gets. A try must reach that server for the read only, queue nothing, store
no event and post nothing, and the model must read back for the others
what the live run would give it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.domain.models import (
    Approval,
    AuditEntry,
    Capability,
    ChatMessage,
    Event,
    Permission,
)
from agentws.tools.admin import set_label, set_permission
from tests.e2e.fake_anthropic import API_KEY, FakeAnthropic, Reply, Turn
from tests.e2e.mcp_support import Running
from tests.e2e.polling import wait_until
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.e2e.run_support import MODEL, deliver, finished, hook, message_of, served
from tests.e2e.test_webhook_capture import captured
from tests.e2e.webhook_support import hook_server, make_hook, post
from tests.in_process import run_cli_beside
from tests.support import clean_env

LOOPBACK = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
CANDIDATE = "Candidate: explain failed deploys, and tell the team."
ASKS: Turn = Turn(
    "Looking into it.",
    (
        ("third_search", {"q": "deploy 42"}),
        ("third_send", {"q": "tell the team"}),
        ("third_wipe", {"q": "the deploy log"}),
    ),
)
FINAL = "Deploy 42 failed at the migration step; I would tell the team."
OUTCOMES = ["ran", "would_queue", "would_ask"]
# A CLI run: interpreter start, imports, one try against loopback servers.
CLI_S = 60.0


def _remote() -> ThirdParty:
    return ThirdParty(
        [
            tool("search", "Search the deploy log", read_only_hint=True),
            tool("send", "Tell the team"),
            tool("wipe", "Wipe a log", destructive_hint=True),
        ]
    )


@asynccontextmanager
async def _world(
    tmp_path: Path, replies: list[Reply], state: ThirdParty
) -> AsyncIterator[tuple[Running, FakeAnthropic]]:
    """agentws on the fake model, with the recording remote attached to acme/ops and labelled."""
    async with (
        served(tmp_path, replies, **LOOPBACK) as (server, fake),
        third_party_server(state) as url,
    ):
        await attach_remote(
            server.store,
            url,
            {"third_search": Capability.READ, "third_wipe": Capability.DESTRUCTIVE},
        )  # third_send is unlabeled: write, as every unlabeled remote tool
        yield server, fake


def _check_the_model_was_told_what_the_live_run_would_say(fake: FakeAnthropic) -> None:
    first, second = fake.requests[-2:]
    (system,) = first["system"]
    assert system["text"].endswith(CANDIDATE)
    searched, queued, asked = second["messages"][-1]["content"]
    assert "third-party found: deploy 42" in searched["content"] and not searched["is_error"]
    assert queued["content"].startswith("Queued for admin approval") and not queued["is_error"]
    assert asked["is_error"] and "destructive" in asked["content"]


async def _admin_api(server: Running) -> httpx2.AsyncClient:
    await create_admin(server.store, "alice", actor="t")
    _, secret = await create_admin_token(server.store, "alice", "tests", actor="t")
    return httpx2.AsyncClient(
        base_url=f"{server.base_url}/api/v1",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=30,
    )


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_try_on_a_sample_runs_the_read_only_and_posts_nothing(tmp_path: Path) -> None:
    state = _remote()
    async with _world(tmp_path, [ASKS, Turn(FINAL)], state) as (server, fake):
        draft = await hook(server, group="ops", prompt="Live prompt.", active=False, capture=True)
        sample_id = captured(await post(draft.url, b'{"deploy": 42, "status": "failed"}'))
        async with await _admin_api(server) as api:
            listed = (await api.get("/workspaces/acme/webhooks/ci/samples")).json()
            shown = (await api.get(f"/workspaces/acme/webhooks/ci/samples/{sample_id}")).json()
            answer = await api.post(
                "/workspaces/acme/webhooks/ci/try",
                json={"sample_id": sample_id, "prompt": CANDIDATE},
            )
        assert answer.status_code == 200, answer.text
        tried = answer.json()
        audited = await wait_until(
            lambda: server.store.select(AuditEntry, action="tool.call"),
            lambda found: len(found) >= 1,
            what="the read's audit entry",
        )
        (trial,) = await server.store.select(AuditEntry, action="webhook.try")
        approvals = await server.store.select(Approval)
        posted = await server.store.select(ChatMessage)
        stored = await server.store.select(Event)

    # Only the read reached the remote; nothing was queued, stored or posted.
    assert state.calls == ["search"]
    assert approvals == [] and posted == [] and stored == []
    assert [c["outcome"] for c in tried["tool_calls"]] == OUTCOMES
    assert [c["name"] for c in tried["tool_calls"]] == ["third_search", "third_send", "third_wipe"]
    search, send, wipe = tried["tool_calls"]
    assert "third-party found: deploy 42" in search["detail"]
    assert send["outcome_label"] == "would queue for approval"
    assert send["arguments"] == {"q": "tell the team"}
    assert wipe["outcome_label"] == "would ask for confirmation"
    assert tried["text"].startswith(FINAL)
    assert "third_send" in tried["text"] and "a try queues nothing" in tried["text"]
    assert (tried["model"], tried["prompt"], tried["source"], tried["source_id"]) == (
        MODEL,
        CANDIDATE,
        "sample",
        sample_id,
    )
    assert tried["usage"]["output_tokens"] == 40
    _check_the_model_was_told_what_the_live_run_would_say(fake)
    # The read was audited as the try's; the try itself as the admin's.
    assert [(e.actor, e.target) for e in audited] == [(f"try:{draft.id}", "third_search")]
    assert trial.actor == "admin:alice" and trial.detail["source_id"] == sample_id
    assert [s["id"] for s in listed["items"]] == [sample_id]
    assert shown["body"] == {"deploy": 42, "status": "failed"}


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_try_on_a_past_event_from_the_cli_runs_the_read_only(tmp_path: Path) -> None:
    state = _remote()
    # The live run answers without tools; the try (from the CLI) asks for all three.
    async with _world(tmp_path, [Turn("Live message."), ASKS, Turn(FINAL)], state) as (
        server,
        fake,
    ):
        live = await hook(server, group="ops", prompt="Live prompt.")
        event_id = await deliver(live, {"deploy": 42, "status": "failed"})
        await finished(server.store, event_id)
        message = await message_of(server, event_id)
        done = await run_cli_beside(
            [
                "webhook",
                "try",
                "acme",
                "ci",
                "--event",
                event_id,
                "--prompt",
                CANDIDATE,
                "--json",
                "--database",
                server.runtime.settings.database_url,
            ],
            env=_cli_env(server, fake),
            cwd=tmp_path,
        )
        approvals = await server.store.select(Approval)
        posted = await server.store.select(ChatMessage)
        stored = await server.store.select(Event)

    assert done.returncode == 0, done.stderr
    tried: dict[str, Any] = json.loads(done.stdout)
    assert state.calls == ["search"]  # the try's read; the live run called nothing
    assert approvals == []
    assert [m.id for m in posted] == [message.id] and message.text == "Live message."
    assert [e.id for e in stored] == [event_id]
    assert [c["outcome"] for c in tried["tool_calls"]] == OUTCOMES
    assert (tried["source"], tried["source_id"], tried["model"]) == ("event", event_id, MODEL)
    assert tried["text"].startswith(FINAL)
    _check_the_model_was_told_what_the_live_run_would_say(fake)


def _cli_env(server: Running, fake: FakeAnthropic) -> dict[str, str]:
    secret_key = server.runtime.settings.secret_key
    assert secret_key is not None
    return clean_env(
        ANTHROPIC_API_KEY=API_KEY,
        ANTHROPIC_BASE_URL=fake.base_url,
        AGENTWS_MODEL=MODEL,
        AGENTWS_SECRET_KEY=secret_key,
        **LOOPBACK,
    )


async def test_the_offline_digest_is_what_a_try_shows_and_bad_requests_are_refused(
    tmp_path: Path,
) -> None:
    async with hook_server(tmp_path) as server:
        draft = await make_hook(server, "ci", active=False, capture=True)
        other = await make_hook(server, "other", active=False, capture=True)
        sample_id = captured(await post(draft.url, b'{"event": "deploy.failed", "service": "api"}'))
        elsewhere = captured(await post(other.url, b'{"event": "x"}'))
        async with await _admin_api(server) as api:
            path = "/workspaces/acme/webhooks/ci/try"
            tried = (await api.post(path, json={"sample_id": sample_id})).json()
            both = await api.post(path, json={"sample_id": sample_id, "event_id": "evt_x"})
            neither = await api.post(path, json={})
            foreign = await api.post(path, json={"sample_id": elsewhere})
            empty = await api.post(path, json={"sample_id": sample_id, "prompt": "  "})
            # Capture is set through the API too: a webhook made to capture is a draft.
            made = (
                await api.post(
                    "/workspaces/acme/webhooks",
                    json={"name": "api", "channel": "local:ops", "prompt": "p", "capture": True},
                )
            ).json()
            contradictory = await api.post(
                "/workspaces/acme/webhooks",
                json={
                    "name": "x",
                    "channel": "ops",
                    "prompt": "p",
                    "capture": True,
                    "active": True,
                },
            )
            stopped = (
                await api.patch("/workspaces/acme/webhooks/api", json={"capture": False})
            ).json()
        posted = await server.store.select(ChatMessage)

    assert tried["model"] == "offline" and tried["tool_calls"] == []
    assert tried["text"].startswith("*ci*: deploy.failed")
    assert tried["prompt"] == draft.webhook.prompt  # the webhook's own, by default
    assert posted == []
    assert (made["capture"], made["active"], made["status"]) == (True, False, "draft")
    assert (stopped["capture"], stopped["active"]) == (False, False)
    for refused, status in (
        (both, 400),
        (neither, 400),
        (foreign, 404),
        (empty, 400),
        (contradictory, 400),
    ):
        assert refused.status_code == status, refused.text
        assert set(refused.json()) == {"error"}


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_a_try_says_what_the_live_run_would_do_with_each_permission(tmp_path: Path) -> None:
    """Pre-authorized writes would run, denied tools are denied, writes set to need a
    confirmation would ask; none of them runs in a try."""
    state = ThirdParty(
        [
            tool("search", "Search", read_only_hint=True),
            tool("send", "Tell the team"),
            tool("note", "Add a note"),
            tool("wipe", "Wipe a log", destructive_hint=True),
        ]
    )
    asks = Turn(
        "",
        (
            ("third_send", {"q": "a"}),
            ("third_note", {"q": "b"}),
            ("third_wipe", {"q": "c"}),
            ("third_search", {"q": 7}),  # not a string: the schema refuses it
            ("third_nothing", {}),
        ),
    )
    async with _world(tmp_path, [asks, Turn("Done.")], state) as (server, _):
        labels = {"third_send": Capability.WRITE, "third_note": Capability.WRITE}
        for name, capability in labels.items():
            await set_label(server.store, "acme", name, capability, actor="admin")
        await set_permission(
            server.store, "acme", "third_wipe", Permission.DENY, group_slug="ops", actor="t"
        )
        await set_permission(
            server.store,
            "acme",
            "third_note",
            Permission.REQUIRES_CONFIRMATION,
            group_slug="ops",
            actor="t",
        )
        draft = await hook(
            server,
            group="ops",
            active=False,
            capture=True,
            allow_tools=("third_send",),
        )
        sample_id = captured(await post(draft.url, b'{"deploy": 43}'))
        async with await _admin_api(server) as api:
            answer = await api.post(
                "/workspaces/acme/webhooks/ci/try", json={"sample_id": sample_id}
            )
        approvals = await server.store.select(Approval)

    assert answer.status_code == 200, answer.text
    outcomes = {c["name"]: c["outcome"] for c in answer.json()["tool_calls"]}
    assert outcomes == {
        "third_send": "would_run",
        "third_note": "would_ask",
        "third_wipe": "denied",
        "third_search": "invalid_arguments",
        "third_nothing": "unknown_tool",
    }
    assert state.calls == [] and approvals == []
