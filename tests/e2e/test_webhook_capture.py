"""Capture: a draft webhook set to capture keeps its deliveries as samples and runs none.

A capturing draft checks a delivery as an active webhook does (size, media
type, JSON or form body, signature, rate limit) and answers 202
``{"status": "captured", "sample_id"}``; it stores no event, starts no run
and posts nothing. It keeps its newest 50 samples, and keeps them when it
is activated. A draft that does not capture still answers 403.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import httpx2
import trio

from agentws.domain.models import ChatMessage, EventStatus, VerificationScheme, WebhookSample
from agentws.webhooks.admin import WebhookChanges, set_active, update_webhook
from agentws.webhooks.samples import KEEP, list_samples
from tests.e2e.mcp_support import Running
from tests.e2e.test_webhook_forms import FORM, GITHUB_SECRET, octokit_signature, push_payload
from tests.e2e.test_webhooks import accepted, assert_nothing_stored
from tests.e2e.webhook_support import (
    ACTOR,
    Hook,
    all_finished,
    assert_error,
    hook_server,
    make_hook,
    post,
    wait_for_messages,
)

UNLIMITED = {"rate_per_min": 100_000, "burst": 100_000}


def captured(response: httpx2.Response) -> str:
    """The sample id of a capture's answer, which says nothing else."""
    assert response.status_code == 202, f"{response.status_code}: {response.text}"
    assert response.headers["content-type"].split(";")[0] == "application/json"
    body = response.json()
    assert set(body) == {"status", "sample_id"}, body
    assert body["status"] == "captured", body
    assert body["sample_id"].startswith("smp_"), body
    return str(body["sample_id"])


async def _capturing(server: Running, name: str = "drafted", **options: object) -> Hook:
    return await make_hook(server, name, active=False, capture=True, **{**UNLIMITED, **options})


async def _nothing_ran(server: Running, hook: Hook) -> None:
    await assert_nothing_stored(server, hook.id)
    assert await server.store.select(ChatMessage) == [], "a capture posted a message"


async def test_a_capturing_draft_keeps_its_newest_50_samples_and_runs_nothing(
    tmp_path: Path,
) -> None:
    async with hook_server(tmp_path) as server:
        hook = await _capturing(server)
        ids = []
        for n in range(KEEP + 5):
            body = json.dumps({"event": "deploy", "n": n}).encode()
            ids.append(captured(await post(hook.url, body, {"X-GitHub-Delivery": f"d-{n}"})))
        kept = await list_samples(server.store, hook.webhook)
        # Nothing was queued, so the worker has nothing to run: no event, run or post.
        await _nothing_ran(server, hook)
        stored = await server.store.count(WebhookSample, webhook_id=hook.id)
        # A draft that does not capture still refuses.
        plain = await make_hook(server, "plain-draft", active=False)
        assert_error(await post(plain.url, b'{"n": 1}'), 403, "webhook_inactive")
        assert await server.store.count(WebhookSample, webhook_id=plain.id) == 0

    assert stored == KEEP == 50
    assert [s.id for s in kept] == list(reversed(ids))[:KEEP]  # newest first
    assert [json.loads(s.body)["n"] for s in kept] == list(range(KEEP + 4, 4, -1))
    # The headers an event would keep are kept.
    assert kept[0].headers.get("x-github-delivery") == f"d-{KEEP + 4}"


async def test_a_capture_is_checked_like_an_active_delivery(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await _capturing(
            server,
            verification=VerificationScheme.GITHUB,
            secret=GITHUB_SECRET,
            max_body_bytes=2048,
            rate_per_min=1,
            burst=2,
        )
        body = json.dumps(push_payload()).encode()
        signed = {"X-Hub-Signature-256": await octokit_signature(GITHUB_SECRET, body)}
        assert_error(await post(hook.url, body), 401, "invalid_signature")
        forged = {"X-Hub-Signature-256": "sha256=" + "0" * 64}
        assert_error(await post(hook.url, body, forged), 401, "invalid_signature")
        assert_error(await post(hook.url, b"x" * 4096, signed), 413, "payload_too_large")
        assert_error(
            await post(hook.url, body, {**signed, "Content-Type": "text/plain"}),
            415,
            "unsupported_media_type",
        )
        assert_error(await post(hook.url, b"{not json", signed), 400, "invalid_json")
        assert_error(await post(hook.url, b"[1, 2]", signed), 422, "not_an_object")
        assert await server.store.count(WebhookSample, webhook_id=hook.id) == 0

        first = captured(await post(hook.url, body, signed))
        # A form body (GitHub's form content type) is verified as sent and kept as its event.
        form = urlencode({"payload": json.dumps(push_payload())}).encode()
        form_signed = {"X-Hub-Signature-256": await octokit_signature(GITHUB_SECRET, form), **FORM}
        second = captured(await post(hook.url, form, form_signed))
        # The bucket (burst 2) is empty now: the rate limit holds for a capture too.
        limited = assert_error(await post(hook.url, body, signed), 429, "rate_limited")
        assert limited
        kept = await list_samples(server.store, hook.webhook)
        await _nothing_ran(server, hook)

    assert [s.id for s in kept] == [second, first]
    assert json.loads(kept[0].body) == push_payload() == json.loads(kept[1].body)


async def test_activating_keeps_the_samples_and_then_deliveries_run(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await _capturing(server)
        sample = captured(await post(hook.url, b'{"event": "captured"}'))
        await set_active(server.store, "acme", hook.id, active=True, actor=ACTOR)
        event_id = accepted(await post(hook.url, b'{"event": "live"}'))
        (event,) = await all_finished(server.store, hook.id)
        (message,) = await wait_for_messages(server.store, 1)
        kept = await list_samples(server.store, hook.webhook)
        # Made a draft again, it captures again (the door, which remembered it
        # active, learns it at the commit: that delivery is asked to come again).
        await set_active(server.store, "acme", hook.id, active=False, actor=ACTOR)
        retry = await post(hook.url, b'{"event": "again"}')
        assert_error(retry, 503, "webhook_changed")
        assert retry.headers["retry-after"] == "1"
        again = captured(await post(hook.url, b'{"event": "again"}'))
        await update_webhook(
            server.store,
            "acme",
            hook.id,
            changes=WebhookChanges(capture=False),
            allowlist=server.runtime.settings.connector_allowlist,
            actor=ACTOR,
        )
        assert_error(await post(hook.url, b'{"n": 1}'), 403, "webhook_inactive")
        after = await list_samples(server.store, hook.webhook)

    assert [s.id for s in kept] == [sample]
    assert event.id == event_id and event.status is EventStatus.DONE
    assert message.event_id == event_id
    assert [s.id for s in after] == [again, sample]


async def test_concurrent_captures_are_each_kept_once(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await _capturing(server)
        ids: list[str] = []

        async def one(n: int) -> None:
            ids.append(captured(await post(hook.url, json.dumps({"n": n}).encode())))

        async with trio.open_nursery() as nursery:
            for n in range(20):
                nursery.start_soon(one, n)
        kept = await list_samples(server.store, hook.webhook)
        await _nothing_ran(server, hook)

    assert sorted(s.id for s in kept) == sorted(ids)
    assert len(set(ids)) == 20
