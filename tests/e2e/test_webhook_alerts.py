"""Failure alerts of a serving agentws: one alert per streak of failed events, one recovery.

The model is a fake Messages API on loopback that refuses (400, a terminal
failure) every event whose payload says ``please-fail``, and answers the
others. Deliveries go through the real door; the alert and the recovery
are read from the local channels they are posted to. "Exactly one" is
checked once nothing is left to post: every event finished and the
streak's notices recorded as posted, so no later message can come.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx2
import pytest
import trio
from cryptography.fernet import Fernet
from prometheus_client.parser import text_string_to_metric_families

from agentws.domain.models import ChatMessage, EventStatus, FailureStreak, Webhook
from agentws.domain.replays import ReplaySelection
from agentws.service import run_service
from agentws.store.union import Store
from agentws.webhooks.admin import set_active
from agentws.webhooks.replays import replay_failed
from tests.e2e.fake_anthropic import API_KEY, Failure, Reply, Turn, fake_anthropic
from tests.e2e.mcp_support import Running, running, settings_for
from tests.e2e.polling import wait_until
from tests.e2e.run_support import MODEL, deliver, finished, hook
from tests.e2e.webhook_support import assert_error, messages, post
from tests.support import migrated_schema

FAIL = {"outcome": "please-fail"}
ALERTS = "local:alerts"
# The alerts task looks for due notices every second.
NOTICE_S = 10.0


def _script(request: dict[str, Any]) -> Reply:
    if "please-fail" in json.dumps(request):
        return Failure(400, "the request was refused (a test)")
    return Turn("All is well.")


@asynccontextmanager
async def served(
    tmp_path: Path, script: Callable[[dict[str, Any]], Reply] = _script, **env: str
) -> AsyncIterator[Running]:
    """agentws whose model fails the events that ask for it (unless ``script`` says else)."""
    async with fake_anthropic(script) as fake:
        settings = {
            "AGENTWS_SECRET_KEY": Fernet.generate_key().decode(),
            "AGENTWS_MODEL": MODEL,
            "ANTHROPIC_API_KEY": API_KEY,
            "ANTHROPIC_BASE_URL": fake.base_url,
            **env,
        }
        async with running(tmp_path, with_library=False, **settings) as server:
            yield server


async def streak_of(store: Store, webhook_id: str) -> FailureStreak | None:
    return await store.latest_failure_streak(webhook_id)


async def settled(store: Store, webhook_id: str) -> FailureStreak:
    """The webhook's latest streak once it has nothing left to post."""
    found = await wait_until(
        lambda: streak_of(store, webhook_id),
        lambda s: s is not None and s.alerted_at is not None and s.due is None,
        timeout_s=NOTICE_S,
        what=f"the notices of webhook {webhook_id} to be posted",
    )
    assert found is not None
    return found


async def channel(store: Store, name: str) -> list[ChatMessage]:
    return await messages(store, "acme", name)


async def alerts_posted(server: Running) -> dict[str, float]:
    """``agentws_webhook_alerts_total{outcome="posted"}`` by kind, as /metrics says."""
    async with httpx2.AsyncClient(timeout=10) as http:
        page = (await http.get(f"{server.base_url}/metrics")).text
    return {
        sample.labels["kind"]: sample.value
        for family in text_string_to_metric_families(page)
        for sample in family.samples
        if sample.name == "agentws_webhook_alerts_total" and sample.labels["outcome"] == "posted"
    }


async def test_one_alert_after_n_failures_then_one_recovery(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        before = await alerts_posted(server)
        store = server.store
        issued = await hook(server, alert_after=3, alerts_channel=ALERTS, concurrency=2)
        failed = [await deliver(issued, {**FAIL, "n": n}) for n in range(2)]
        for event_id in failed:
            assert (await finished(store, event_id)).status is EventStatus.FAILED
        # Two in a row: below the count, nothing is due.
        streak = await streak_of(store, issued.id)
        assert streak is not None and (streak.failures, streak.alerted_at) == (2, None)
        # Three more, at once: the one that makes three marks the alert.
        failed += [await deliver(issued, {**FAIL, "n": n}) for n in range(2, 5)]
        for event_id in failed:
            await finished(store, event_id)
        streak = await settled(store, issued.id)
        assert streak.failures == 5 and streak.paused_at is None
        (alert,) = await channel(store, ALERTS)
        assert "'ci' (acme): " in alert.text and "in a row failed" in alert.text
        assert "the request was refused (a test)" in alert.text
        assert "agentws webhook replay acme ci --failed" in alert.text
        assert f"/dashboard/w/acme/webhooks/{issued.id}" in alert.text
        assert streak.alert_message_id == alert.id and alert.event_id is None
        assert await channel(store, "local:ops") == []  # failed events post nothing
        # Still active (no pause asked for): an event that works ends the streak.
        ok = await deliver(issued, {"outcome": "fine"})
        assert (await finished(store, ok)).status is EventStatus.DONE
        streak = await wait_until(
            lambda: streak_of(store, issued.id),
            lambda s: s is not None and s.recovery_posted_at is not None,
            timeout_s=NOTICE_S,
            what="the recovery to be posted",
        )
        assert streak is not None and streak.due is None
        alert_again, recovery = await channel(store, ALERTS)
        assert alert_again.id == alert.id
        assert f"works again: event {ok} succeeded after 5 failed events" in recovery.text
        assert "The 5 events that failed were not replayed" in recovery.text
        assert "agentws webhook replay acme ci --failed" in recovery.text
        assert "still paused" not in recovery.text
        assert streak.recovery_message_id == recovery.id
        (run_message,) = await channel(store, "local:ops")
        assert run_message.event_id == ok
        # A new failure opens a new streak, far from the count: no message.
        await finished(store, await deliver(issued, {**FAIL, "n": 9}))
        newest = await streak_of(store, issued.id)
        assert newest is not None and newest.id != streak.id and newest.failures == 1
        assert newest.due is None and len(await channel(store, ALERTS)) == 2
        after = await alerts_posted(server)
        for kind in ("alert", "recovery"):
            assert after[kind] == before.get(kind, 0.0) + 1


async def test_the_alert_pauses_the_webhook_and_activating_it_lets_it_recover(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as server:
        store = server.store
        issued = await hook(server, alert_after=2, pause_on_failure=True, concurrency=1)
        for n in range(2):
            await finished(store, await deliver(issued, {**FAIL, "n": n}))
        streak = await settled(store, issued.id)
        paused = await store.get(Webhook, issued.id)
        assert (paused.active, paused.paused_at) == (False, streak.paused_at)
        assert streak.paused_at is not None
        # The alert goes to the webhook's own channel (it names no other) and says so.
        (alert,) = await channel(store, "local:ops")
        assert "It is paused" in alert.text and "agentws webhook activate acme ci" in alert.text
        # The door answers like a draft, saying why.
        refused = await post(issued.url, b'{"n": 3}')
        body = assert_error(refused, 403, "webhook_inactive")
        assert "paused" in body["error"]["message"] and "kept failing" in body["error"]["message"]
        # Activated again: deliveries are taken, the pause is over, the streak goes on.
        await set_active(store, "acme", "ci", active=True, actor="test")
        assert (await store.get(Webhook, issued.id)).paused_at is None
        await finished(store, await deliver(issued, {**FAIL, "n": 4}))
        streak = await settled(store, issued.id)
        assert streak.failures == 3 and len(await channel(store, "local:ops")) == 1
        assert (await store.get(Webhook, issued.id)).active  # one pause per streak
        ok = await deliver(issued, {"outcome": "fine"})
        await finished(store, ok)
        await wait_until(
            lambda: streak_of(store, issued.id),
            lambda s: s is not None and s.recovery_posted_at is not None,
            timeout_s=NOTICE_S,
            what="the recovery to be posted",
        )
        # The alert, the run's message, then (the run's transaction ends the streak) the recovery.
        texts = [m.text for m in await channel(store, "local:ops")]
        assert texts[0] == alert.text and texts[1] == "All is well."
        assert f"works again: event {ok} succeeded after 3 failed events" in texts[2]
        assert len(texts) == 3


async def test_the_recovery_after_a_replay_of_the_failures_asks_for_no_replay(
    tmp_path: Path,
) -> None:
    fixed = False

    def script(request: dict[str, Any]) -> Reply:
        return _script({} if fixed else request)

    async with served(tmp_path, script) as server:
        store = server.store
        issued = await hook(server, alert_after=2, alerts_channel=ALERTS, concurrency=1)
        failed = [await deliver(issued, {**FAIL, "n": n}) for n in range(2)]
        for event_id in failed:
            assert (await finished(store, event_id)).status is EventStatus.FAILED
        await settled(store, issued.id)
        # The cause is fixed; what failed is replayed, as the alert says; the replays work.
        fixed = True
        webhook = await store.get(Webhook, issued.id)
        done = await replay_failed(store, webhook, ReplaySelection(), actor="test")
        for replay_id in done.queued.values():
            assert (await finished(store, replay_id)).status is EventStatus.DONE
        await wait_until(
            lambda: streak_of(store, issued.id),
            lambda s: s is not None and s.recovery_posted_at is not None,
            timeout_s=NOTICE_S,
            what="the recovery to be posted",
        )
        _, recovery = await channel(store, ALERTS)
        assert "works again" in recovery.text
        assert "--failed" not in recovery.text, recovery.text
        assert "Every event that failed has been replayed" in recovery.text, recovery.text
        assert "agentws event list acme --webhook ci" in recovery.text


async def test_a_webhook_with_alerts_off_fails_quietly(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        issued = await hook(server, alert_after=0, pause_on_failure=True)
        ids = [await deliver(issued, {**FAIL, "n": n}) for n in range(4)]
        for event_id in ids:
            await finished(server.store, event_id)
        streak = await streak_of(server.store, issued.id)
        assert streak is not None and (streak.failures, streak.alerted_at) == (4, None)
        assert (await server.store.get(Webhook, issued.id)).active
        assert await server.store.count(ChatMessage) == 0


async def test_an_alert_its_channel_cannot_take_is_given_up_with_its_reason(
    tmp_path: Path,
) -> None:
    """The alerts channel names a connector that is gone: the alert is given up, and says why."""
    async with served(tmp_path) as server:
        issued = await hook(server, alert_after=1)
        # Saved valid, then pointed (in the store: the admin functions check it) nowhere.
        webhook = await server.store.get(Webhook, issued.id)
        await server.store.update(attrs.evolve(webhook, alerts_channel="webhook:gone"))
        await finished(server.store, await deliver(issued, {**FAIL}))
        streak = await wait_until(
            lambda: streak_of(server.store, issued.id),
            lambda s: s is not None and s.alert_posted_at is not None,
            timeout_s=NOTICE_S,
            what="the alert to be given up",
        )
        assert streak is not None and streak.alert_message_id is None
        assert streak.notice_error and "gone" in streak.notice_error
        assert await server.store.count(ChatMessage) == 0


@pytest.mark.postgres
async def test_two_instances_on_postgresql_post_one_alert_and_one_recovery(
    tmp_path: Path,
) -> None:
    async with migrated_schema() as url, fake_anthropic(_script) as fake:
        env = {
            "AGENTWS_SECRET_KEY": Fernet.generate_key().decode(),
            "AGENTWS_MODEL": MODEL,
            "ANTHROPIC_API_KEY": API_KEY,
            "ANTHROPIC_BASE_URL": fake.base_url,
        }
        async with (
            running(tmp_path, with_library=False, database_url=url, **env) as server,
            trio.open_nursery() as nursery,
        ):
            other = await nursery.start(
                functools.partial(
                    run_service,
                    settings_for(tmp_path, database_url=url, AGENTWS_INSTANCE_ID="test-2", **env),
                )
            )
            store = server.store
            # (No pause here: deliveries still arriving would be refused. Pausing under
            # concurrent failures is in tests/contract/test_failure_streaks.py.)
            issued = await hook(server, alert_after=4, concurrency=8)
            async with httpx2.AsyncClient(timeout=10) as http:

                async def send(n: int) -> None:
                    response = await http.post(issued.url, json={**FAIL, "n": n})
                    assert response.status_code == 202, response.text

                async with trio.open_nursery() as senders:
                    for n in range(12):
                        senders.start_soon(send, n)
            await wait_until(
                lambda: store.select(FailureStreak, webhook_id=issued.id),
                lambda found: bool(found) and found[0].failures == 12,
                timeout_s=NOTICE_S,
                what="twelve failures counted",
            )
            await settled(store, issued.id)
            for n in range(6):
                await deliver(issued, {"outcome": "fine", "n": n})
            await wait_until(
                lambda: streak_of(store, issued.id),
                lambda s: s is not None and s.recovery_posted_at is not None,
                timeout_s=NOTICE_S,
                what="the recovery to be posted",
            )
            await wait_until(
                lambda: store.select(ChatMessage),
                lambda found: len(found) == 6 + 2,
                timeout_s=NOTICE_S,
                what="six run messages, an alert and a recovery",
            )
            texts = [m.text for m in await channel(store, "local:ops") if m.event_id is None]
            assert len(texts) == 2
            assert "in a row failed" in texts[0] and "works again" in texts[1]
            assert "after 12 failed events" in texts[1]
            other.service.request_stop()


async def test_alert_settings_and_the_failure_state_through_the_admin_api(tmp_path: Path) -> None:
    from agentws.admins.access import create_admin_token
    from agentws.admins.accounts import create_admin

    async with served(tmp_path) as server:
        await create_admin(server.store, "alice", actor="t")
        _, token = await create_admin_token(server.store, "alice", "tests", actor="t")
        async with httpx2.AsyncClient(
            base_url=f"{server.base_url}/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        ) as api:
            created = await api.post(
                "/workspaces/acme/webhooks",
                json={
                    "name": "ci",
                    "channel": "local:ops",
                    "prompt": "Say.",
                    "rate_per_min": 600,
                    "alert_after": 1,
                    "alerts_channel": "#alerts",
                    "pause_on_failure": True,
                },
            )
            assert created.status_code == 201, created.text
            url = server.base_url + "/hooks/" + created.json()["url"].split("/hooks/")[1]
            assert (created.json()["alert_after"], created.json()["alerts_channel"]) == (
                1,
                ALERTS,
            )
            quiet = (await api.get("/workspaces/acme/webhooks/ci/failures")).json()
            assert (quiet["status"], quiet["failure_streak"], quiet["replayable"]) == (
                "active",
                None,
                0,
            )
            async with httpx2.AsyncClient(timeout=10) as http:
                sent = await http.post(url, json=FAIL)
            assert sent.status_code == 202
            webhook_id = created.json()["id"]
            await finished(server.store, sent.json()["event_id"])
            await settled(server.store, webhook_id)
            failing = (await api.get("/workspaces/acme/webhooks/ci/failures")).json()
            assert (failing["status"], failing["replayable"]) == ("paused", 1)
            streak = failing["failure_streak"]
            assert (streak["failures"], streak["open"]) == (1, True)
            assert streak["paused_at"] == failing["paused_at"] is not None
            assert streak["alert_message_id"] is not None
            shown = (await api.get("/workspaces/acme/webhooks/ci")).json()
            assert (shown["status"], shown["active"]) == ("paused", False)
            patched = await api.patch(
                "/workspaces/acme/webhooks/ci",
                json={"alert_after": 0, "alerts_channel": "", "active": True},
            )
            assert patched.status_code == 200, patched.text
            assert (patched.json()["status"], patched.json()["alert_after"]) == ("active", 0)
            assert patched.json()["alerts_channel"] is None
            refused = await api.patch("/workspaces/acme/webhooks/ci", json={"alert_after": -1})
            assert refused.status_code == 400
