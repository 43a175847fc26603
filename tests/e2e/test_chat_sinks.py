"""Runs posting to Slack (``slack:<channel>``) and to chat incoming webhooks (``webhook:<name>``).

agentws serves on loopback with the real model client against the fake
Messages API; Slack is :mod:`tests.e2e.fake_slack`, which speaks the Web
API's wire format. Deliveries come in over HTTP like any sender's.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import httpx2
import pytest

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.approvals.channel_reports import ChannelReports
from agentws.approvals.decisions import approve, deny
from agentws.chat.router import SinkRouter
from agentws.connectors.admin import ConnectorSecret, add_connector
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import (
    Approval,
    Capability,
    ChatMessage,
    ConnectorKind,
    Event,
    EventAttempt,
    EventStatus,
)
from agentws.settings.secret_box import SecretBox
from tests.e2e.fake_anthropic import FakeAnthropic, Reply, Turn
from tests.e2e.fake_slack import BOT_TOKEN, FakeSlack, Posted, fake_slack
from tests.e2e.mcp_support import Running
from tests.e2e.polling import wait_until
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.e2e.run_support import deliver, finished, hook, message_of, served
from tests.support import run_agentws

LOOPBACK = Allowlist.parse("127.0.0.1/32")
CHANNEL = "C0123456789"
ENV = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}


@asynccontextmanager
async def with_slack(
    tmp_path: Path, replies: list[Reply], *, token: str = BOT_TOKEN, **slack: object
) -> AsyncIterator[tuple[Running, FakeAnthropic, FakeSlack]]:
    """agentws with the fake model, and a Slack connector ``slack`` at the fake Slack."""
    async with fake_slack(**slack) as fake, served(tmp_path, replies, **ENV) as (server, model):
        await add_connector(
            server.store,
            "acme",
            "slack",
            kind=ConnectorKind.SLACK,
            url=fake.api_url,
            headers={},
            secret=ConnectorSecret(token),
            box=SecretBox.from_settings(server.runtime.settings),
            allowlist=LOOPBACK,
            actor="t",
        )
        yield server, model, fake


async def _messages(slack: FakeSlack) -> list[Posted]:
    return list(slack.messages)


async def test_the_message_lands_in_the_slack_channel_as_mrkdwn(tmp_path: Path) -> None:
    text = "**Deploy 42 failed** at *migrate*: see [the log](https://ci.example/42) <!channel>"
    async with with_slack(tmp_path, [Turn(text)]) as (server, _, slack):
        issued = await hook(server, channel=f"slack:{CHANNEL}")
        event_id = await deliver(issued, {"deploy": 42})
        event = await finished(server.store, event_id)
        assert event.status is EventStatus.DONE, event.error
        record = await message_of(server, event_id)
        # A payload that names a thread is answered in it; the channel stays the webhook's.
        threaded = await deliver(issued, {"thread_ts": "1799999999.000100", "channel": "C666"})
        assert (await finished(server.store, threaded)).status is EventStatus.DONE

    first, reply = slack.messages
    assert first.channel == CHANNEL
    assert first.authorization == f"Bearer {BOT_TOKEN}"
    assert first.body == {
        "channel": CHANNEL,
        "text": (
            "*Deploy 42 failed* at _migrate_: see <https://ci.example/42|the log> &lt;!channel&gt;"
        ),
        "mrkdwn": True,
        "unfurl_links": False,
        "unfurl_media": False,
        "metadata": {"event_type": "agentws_event", "event_payload": {"event_id": event_id}},
    }
    assert "thread_ts" not in first.body
    # What was posted is recorded with Slack's id for it (the text as the model wrote it).
    assert (record.channel, record.external_id, record.text) == (f"slack:{CHANNEL}", first.ts, text)
    assert reply.channel == CHANNEL and reply.body["thread_ts"] == "1799999999.000100"


async def test_a_rate_limit_is_waited_out_as_retry_after_asks(tmp_path: Path) -> None:
    async with with_slack(tmp_path, [Turn("Posted after the limit.")], rate_limited=1) as (
        server,
        model,
        slack,
    ):
        issued = await hook(server, channel=f"slack:{CHANNEL}")
        event = await finished(server.store, await deliver(issued, {"n": 1}))
    assert event.status is EventStatus.DONE and event.attempts == 1, event.error
    (posted,) = slack.messages
    (_, limited_at), (_, posted_at) = slack.calls
    assert posted_at - limited_at >= 1.0  # Retry-After: 1
    assert posted.body["text"] == "Posted after the limit."
    assert len(model.requests) == 1  # waited within the attempt: no second model run


async def test_a_long_rate_limit_retries_the_event_no_sooner_than_asked(tmp_path: Path) -> None:
    async with with_slack(tmp_path, [Turn("x")], rate_limited=1, retry_after="120") as (
        server,
        _,
        slack,
    ):
        issued = await hook(server, channel=f"slack:{CHANNEL}")
        event_id = await deliver(issued, {"n": 1})
        (attempt,) = await wait_until(
            lambda: server.store.select(EventAttempt, event_id=event_id),
            lambda found: len(found) == 1,
            what="the first attempt to end",
        )
        event = await server.store.get(Event, event_id)
    assert attempt.outcome == "retry"
    assert attempt.error is not None and "rate limited; retry after 120 s" in attempt.error
    assert event.status is EventStatus.QUEUED
    assert attempt.finished_at is not None
    assert event.available_at >= attempt.finished_at + timedelta(seconds=119)
    assert slack.messages == []


async def test_an_invalid_token_fails_the_event_at_once_saying_why(tmp_path: Path) -> None:
    async with with_slack(tmp_path, [Turn("never posted")], token="xoxb-revoked") as (
        server,
        _,
        slack,
    ):
        issued = await hook(server, channel=f"slack:{CHANNEL}")
        event = await finished(server.store, await deliver(issued, {"n": 1}))
        recorded = await server.store.select(ChatMessage)
    assert event.status is EventStatus.FAILED
    assert event.attempts == 1  # terminal: not retried
    assert event.error is not None
    assert "the bot token was refused (invalid_auth)" in event.error
    assert "agentws connector test" in event.error
    assert slack.messages == [] and recorded == []


async def test_an_unknown_channel_fails_terminally(tmp_path: Path) -> None:
    async with with_slack(tmp_path, [Turn("x")]) as (server, _, _slack):
        issued = await hook(server, channel="slack:C9999999999")
        event = await finished(server.store, await deliver(issued, {"n": 1}))
    assert event.status is EventStatus.FAILED and event.attempts == 1
    assert event.error is not None and "channel_not_found" in event.error


async def test_a_post_whose_answer_was_lost_is_found_and_not_posted_again(
    tmp_path: Path,
) -> None:
    # Slack stores the message and then answers 500: the attempt fails (retryable);
    # the retry asks Slack's history, finds the message by its metadata, posts nothing.
    async with with_slack(tmp_path, [Turn("Only once.")], fail_after_posting=1) as (
        server,
        model,
        slack,
    ):
        issued = await hook(server, channel=f"slack:{CHANNEL}")
        event_id = await deliver(issued, {"n": 1})
        event = await finished(server.store, event_id)
        record = await message_of(server, event_id)
    assert event.status is EventStatus.DONE and event.attempts == 2, event.error
    (posted,) = slack.messages
    assert record.external_id == posted.ts
    assert len(model.requests) == 1  # found before the run: the model was not asked again
    assert [m for m, _ in slack.calls] == ["chat.postMessage", "conversations.history"]


async def test_an_incoming_webhook_gets_the_message_and_a_removed_one_fails_clearly(
    tmp_path: Path,
) -> None:
    async with (
        fake_slack(gone_hooks={"T0/B0/GONE"}) as chat,
        served(tmp_path, [Turn("Deploy **42** done."), Turn("never")], **ENV) as (server, _),
    ):
        box = SecretBox.from_settings(server.runtime.settings)
        for name, url in (("alerts", chat.hook_url()), ("old", chat.hook_url("T0/B0/GONE"))):
            await add_connector(
                server.store,
                "acme",
                name,
                kind=ConnectorKind.INCOMING_WEBHOOK,
                url=None,
                headers={},
                secret=ConnectorSecret(url),
                box=box,
                allowlist=LOOPBACK,
                actor="t",
            )
        good = await finished(
            server.store, await deliver(await hook(server, channel="webhook:alerts"), {"n": 1})
        )
        bad = await finished(
            server.store, await deliver(await hook(server, "old", channel="webhook:old"), {"n": 2})
        )
        record = await message_of(server, good.id)
    assert good.status is EventStatus.DONE, good.error
    assert chat.hook_posts == [("T000/B000/XXXXSECRETXXXX", {"text": "Deploy **42** done."})]
    assert record.channel == "webhook:alerts"
    assert bad.status is EventStatus.FAILED and bad.attempts == 1
    assert bad.error is not None and "HTTP 404" in bad.error and "removed or revoked" in bad.error
    assert "GONE" not in bad.error  # the URL is a secret: only its origin is named


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_a_queued_call_is_announced_and_its_outcome_follows_in_the_thread(
    tmp_path: Path,
) -> None:
    state = ThirdParty([tool("send", "Send a page")])
    replies: list[Reply] = [
        Turn("", (("third_send", {"q": "page the on-call"}),)),
        Turn("I asked to page the on-call."),
        Turn("", (("third_send", {"q": "page again"}),)),
        Turn("I asked again."),
    ]
    async with (
        with_slack(tmp_path, replies) as (server, _, slack),
        third_party_server(state) as url,
    ):
        await attach_remote(server.store, url, {})
        issued = await hook(server, group="ops", channel=f"slack:{CHANNEL}")
        first = await finished(server.store, await deliver(issued, {"alert": "disk full"}))
        second = await finished(server.store, await deliver(issued, {"alert": "disk full again"}))
        assert (first.status, second.status) == (EventStatus.DONE, EventStatus.DONE)
        assert state.calls == []  # both wait for an admin
        one, two = sorted(await server.store.select(Approval), key=lambda a: a.created_at)
        assert (one.event_id, two.event_id) == (first.id, second.id)

        await approve(server.store, one.id, actor="admin:alice", reason=None)
        await deny(server.store, two.id, actor="admin:bob", reason="once is enough")
        # A report is claimed (reported_at) before it is posted: wait for the posts.
        await wait_until(
            lambda: _messages(slack),
            lambda found: len(found) >= 4,
            what="both outcomes to be reported",
        )
        assert all(a.reported_at is not None for a in await server.store.select(Approval))
        base = server.runtime.settings.public_base_url

    notice, other_notice, *follow_ups = slack.messages
    assert len(follow_ups) == 2  # one report per approval, no more
    assert notice.body["text"].startswith("I asked to page the on-call.")
    assert f"approval {one.id}" in notice.body["text"]
    assert f"{base}/dashboard/approvals/{one.id}" in notice.body["text"]
    assert state.calls == ["send"]  # the approved call ran, once
    by_thread = {m.body["thread_ts"]: m.body["text"] for m in follow_ups}
    assert set(by_thread) == {notice.ts, other_notice.ts}
    assert by_thread[notice.ts].startswith(
        f"✅ Approved by admin:alice: third_send (approval {one.id}) ran."
    )
    assert "third-party found: page the on-call" in by_thread[notice.ts]
    assert by_thread[other_notice.ts] == (
        f"❌ Denied by admin:bob: third_send (approval {two.id}) did not run. "
        "Reason: once is enough"
    )
    assert all("metadata" not in m.body for m in follow_ups)  # not an event's message


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_an_outcome_decided_mid_run_follows_the_runs_message_once(tmp_path: Path) -> None:
    state = ThirdParty([tool("send", "Send a page")])
    # The run queues the call, then takes a while to write its message.
    replies: list[Reply] = [
        Turn("", (("third_send", {"q": "x"}),)),
        Turn("Waiting for approval.", delay_s=1.0),
    ]
    async with (
        with_slack(tmp_path, replies) as (server, _, slack),
        third_party_server(state) as url,
    ):
        await attach_remote(server.store, url, {})
        issued = await hook(server, group="ops", channel=f"slack:{CHANNEL}")
        event_id = await deliver(issued, {"n": 1})
        (pending,) = await wait_until(
            lambda: server.store.select(Approval),
            lambda found: len(found) == 1,
            what="the call to be queued",
        )
        await deny(server.store, pending.id, actor="admin:bob", reason=None)
        assert not (await server.store.get(Event, event_id)).status.finished
        await finished(server.store, event_id)
        await wait_until(lambda: _messages(slack), lambda found: len(found) >= 2, what="the report")
        assert (await server.store.get(Approval, pending.id)).reported_at is not None
        # Another instance's reporter (or this one's next round) finds nothing to do.
        again = ChannelReports(
            server.store, SinkRouter(server.store, server.runtime.settings, server.runtime.keys)
        )
        assert await again.report_due() == 0
    notice, report = slack.messages
    assert notice.body["text"].startswith("Waiting for approval.")
    assert report.body["thread_ts"] == notice.ts
    assert report.body["text"].startswith("❌ Denied by admin:bob")


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_a_preauthorized_write_tool_runs_until_its_definition_changes(
    tmp_path: Path,
) -> None:
    from agentws.connectors.remote_mcp import fetch_tools, remote_deadline
    from agentws.domain.models import Connector
    from agentws.tools.cache_sync import sync_tool_cache

    state = ThirdParty([tool("send", "Send a page"), tool("wipe", "Wipe", destructive_hint=True)])
    replies: list[Reply] = [
        Turn("", (("third_send", {"q": "first"}),)),
        Turn("Sent."),
        Turn("", (("third_send", {"q": "second"}),)),
        Turn("Asked."),
    ]
    async with (
        served(tmp_path, replies, **ENV) as (server, _),
        third_party_server(state) as url,
    ):
        await attach_remote(server.store, url, {"third_wipe": Capability.DESTRUCTIVE})
        issued = await hook(server, group="ops", allow_tools=("third_send",))
        assert set(issued.webhook.allowed_tools) == {"third_send"}
        first = await finished(server.store, await deliver(issued, {"n": 1}))
        assert first.status is EventStatus.DONE
        assert state.calls == ["send"]  # ran without an approval
        assert await server.store.select(Approval) == []
        assert "Waiting for an admin" not in (await message_of(server, first.id)).text

        # The remote changes the tool: the pre-authorization no longer applies.
        state.tools[0] = tool("send", "Send a page, and also email everyone")
        (connector,) = await server.store.select(Connector, name="third")
        with remote_deadline(connector, 10):
            tools = await fetch_tools(connector, box=None, allowlist=LOOPBACK)
        await sync_tool_cache(server.store, connector, tools, actor="t")
        second = await finished(server.store, await deliver(issued, {"n": 2}))
        (queued,) = await server.store.select(Approval)
    assert second.status is EventStatus.DONE
    assert state.calls == ["send"]  # not run again
    assert queued.event_id == second.id and queued.tool_name == "third_send"


MASS_MENTIONS = (
    "Heads up @channel @here @All @everyone <!channel> <!here|here> (mail ops@all.example)"
)
# Each mention word, as some chat pings everyone for it.
_MENTION = re.compile(
    r"(?<![\w.])@(channel|here|all|everyone)\b|<!(channel|here|everyone|all)", re.I
)


async def test_mass_mentions_reach_incoming_webhooks_inert_unless_the_webhook_allows_them(
    tmp_path: Path,
) -> None:
    # Mattermost, Rocket.Chat and the rest take {"text"}: their @channel, @here,
    # @all (and Slack's <!channel>, which Mattermost translates) must not ping.
    async with (
        fake_slack() as chat,
        served(tmp_path, [Turn(MASS_MENTIONS), Turn(MASS_MENTIONS)], **ENV) as (server, _),
    ):
        await add_connector(
            server.store,
            "acme",
            "mattermost",
            kind=ConnectorKind.INCOMING_WEBHOOK,
            url=None,
            headers={},
            secret=ConnectorSecret(chat.hook_url()),
            box=SecretBox.from_settings(server.runtime.settings),
            allowlist=LOOPBACK,
            actor="t",
        )
        quiet = await hook(server, channel="webhook:mattermost")
        loud = await hook(server, "loud", channel="webhook:mattermost", allow_mentions=True)
        assert (quiet.webhook.allow_mentions, loud.webhook.allow_mentions) == (False, True)
        first = await finished(server.store, await deliver(quiet, {"n": 1}))
        second = await finished(server.store, await deliver(loud, {"n": 2}))
    assert (first.status, second.status) == (EventStatus.DONE, EventStatus.DONE)
    (_, inert), (_, raw) = chat.hook_posts
    assert _MENTION.findall(inert["text"]) == []
    # Only a joiner was added: the text reads the same.
    assert inert["text"].replace("\u200d", "") == MASS_MENTIONS
    assert raw == {"text": MASS_MENTIONS}


async def test_mass_mentions_reach_slack_inert(tmp_path: Path) -> None:
    async with with_slack(tmp_path, [Turn(MASS_MENTIONS)]) as (server, _, slack):
        issued = await hook(server, channel=f"slack:{CHANNEL}")
        event = await finished(server.store, await deliver(issued, {"n": 1}))
    assert event.status is EventStatus.DONE, event.error
    (posted,) = slack.messages
    assert _MENTION.findall(posted.body["text"]) == []
    assert "&lt;!channel&gt;" in posted.body["text"]


async def test_an_html_error_page_becomes_a_short_clean_error(tmp_path: Path) -> None:
    # A proxy in front of the chat answers 500 with a 60 KB HTML page that
    # echoes the request: the event's error keeps a short, tag-free excerpt
    # without the hook's secret path or the password, and `event list` stays
    # one line per event.
    secret_path = "T000/B000/BROKENSECRET"
    database_url = f"sqlite:///{tmp_path / 'mcp.db'}"
    async with (
        fake_slack(broken_hooks={secret_path}) as chat,
        served(tmp_path, [Turn("x")] * 4, database_url=database_url, **ENV) as (server, _),
    ):
        await add_connector(
            server.store,
            "acme",
            "proxied",
            kind=ConnectorKind.INCOMING_WEBHOOK,
            url=None,
            headers={},
            secret=ConnectorSecret(chat.hook_url(secret_path)),
            box=SecretBox.from_settings(server.runtime.settings),
            allowlist=LOOPBACK,
            actor="t",
        )
        issued = await hook(server, channel="webhook:proxied")
        event = await finished(server.store, await deliver(issued, {"n": 1}))
        attempts = await server.store.select(EventAttempt, event_id=event.id)
    assert event.status is EventStatus.FAILED and event.error is not None
    for error in [event.error, *(a.error for a in attempts)]:
        assert error is not None
        assert "HTTP 500" in error and "Internal Server Error" in error, error
        assert len(error) <= 600, error
        assert "<" not in error and ">" not in error and "\n" not in error, error
        assert "window.trace" not in error and "font-family" not in error, error
        assert "BROKENSECRET" not in error and "hunter2" not in error, error
        assert "  " not in error, error

    code, out, err = await run_agentws(tmp_path, database_url, "event", "list", "acme")
    assert code == 0, err
    _header, *rows = out.strip().splitlines()
    assert [row.split()[0] for row in rows] == [event.id]  # one line for the one event
    assert "Internal Server Error" in rows[0]


async def test_allow_mentions_is_set_and_changed_through_the_admin_api(tmp_path: Path) -> None:
    async with served(tmp_path, []) as (server, _):
        await create_admin(server.store, "alice", actor="t")
        _, secret = await create_admin_token(server.store, "alice", "tests", actor="t")
        async with httpx2.AsyncClient(
            base_url=f"{server.base_url}/api/v1",
            headers={"Authorization": f"Bearer {secret}"},
            timeout=10,
        ) as api:
            body = {"name": "ci", "channel": "local:ops", "prompt": "Summarise."}
            created = (await api.post("/workspaces/acme/webhooks", json=body)).json()
            loud = await api.patch("/workspaces/acme/webhooks/ci", json={"allow_mentions": True})
            kept = await api.patch("/workspaces/acme/webhooks/ci", json={"prompt": "Other."})
            wrong = await api.patch("/workspaces/acme/webhooks/ci", json={"allow_mentions": "yes"})
    assert created["allow_mentions"] is False
    assert loud.json()["allow_mentions"] is True
    assert kept.json()["allow_mentions"] is True
    assert wrong.status_code in (400, 422), wrong.text
