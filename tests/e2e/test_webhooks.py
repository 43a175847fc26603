"""The webhook door end to end: real senders' deliveries over TCP, down to the posted message.

Each test serves agentws on a loopback port (:func:`webhook_support.hook_server`)
and posts to ``/hooks/<token>`` as GitHub, Stripe, a Standard Webhooks
sender, Slack or a plain shared-secret sender would. Accepted events run
through the worker and the offline model (no language model is configured)
and end as one message in ``local:ops``. Every refusal is checked for its
documented status and error code, its JSON shape, and for leaving no event
and no agent run behind; the order in which the door checks a delivery is
pinned by deliveries that are wrong in two ways at once. Large uploads it
refuses must be cut off, neither read to their end nor left hanging; and a
server with nothing to do stops without waiting out its grace period.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import attrs
import httpx2
import pytest
import trio

from agentws.core.errors import ValidationError
from agentws.domain.models import EventStatus, VerificationScheme
from agentws.domain.signatures import (
    SHARED_SECRET_HEADER,
    sign_github,
    sign_slack,
    sign_standard_webhooks,
    sign_stripe,
)
from agentws.webhooks.admin import delete_webhook, set_active
from tests.e2e.loop_steps import watch_steps
from tests.e2e.mcp_support import Running
from tests.e2e.slow_client_support import assert_timed_out, request_head, trickle
from tests.e2e.webhook_support import (
    ACTOR,
    CHANNEL,
    all_finished,
    assert_error,
    attempts,
    events,
    hook_server,
    make_hook,
    messages,
    post,
    wait_for_messages,
)

GITHUB_SECRET = "gh-webhook-secret-1f6c2a"
STRIPE_SECRET = "whsec_stripe_test_4eC39HqLyjWDarjtT1zdp7dc"
SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
SHARED_SECRET = "s3cr3t-shared-value"
# A body limit small enough to pass with a few kilobytes.
SMALL_LIMIT = 1024
# The chunked upload offered to a webhook with SMALL_LIMIT: 50 MB in 64 KiB chunks.
CHUNK = 64 * 1024
OFFERED = 50 * 1024 * 1024
# What the server may have taken of it before cutting it off: socket buffers
# and the server's read-ahead, nowhere near the whole upload.
CUT_OFF_BY = 8 * 1024 * 1024
# Whether a broken server fails to cut an upload off is a race between its
# reader and the door (see refused_uploads): one upload in ten or so shows it,
# thirty in a row almost always do (and take about a second when all is well).
UPLOADS = 30
# An upload that is cut off is over in well under this.
UPLOAD_S = 1.0
# Signed timestamps the door must refuse: 301 s and more in the past; in the
# future, with a margin for the second the test's clock may be behind.
STALE_SKEWS_S = (-301, -3600, 305)


def standard_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def encode(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def workflow_run_payload(*, run_id: int = 9876543210) -> dict[str, Any]:
    """GitHub's ``workflow_run`` event for a CI run on main that failed."""
    return {
        "action": "completed",
        "workflow_run": {
            "id": run_id,
            "name": "CI",
            "display_title": "Bump checkout to v4",
            "head_branch": "main",
            "head_sha": "4f1c2e9d8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e",
            "run_number": 412,
            "event": "push",
            "status": "completed",
            "conclusion": "failure",
            "workflow_id": 161335,
            "html_url": f"https://github.com/acme/shop/actions/runs/{run_id}",
            "created_at": "2025-05-02T09:14:07Z",
            "updated_at": "2025-05-02T09:19:42Z",
            "actor": {"login": "octocat", "id": 583231},
        },
        "workflow": {"id": 161335, "name": "CI", "path": ".github/workflows/ci.yml"},
        "repository": {
            "id": 1296269,
            "name": "shop",
            "full_name": "acme/shop",
            "private": True,
            "html_url": "https://github.com/acme/shop",
            "default_branch": "main",
        },
        "organization": {"login": "acme", "id": 9919},
        "sender": {"login": "octocat", "id": 583231, "type": "User"},
    }


def github_headers(body: bytes, *, delivery: str, event: str = "workflow_run") -> dict[str, str]:
    return {
        **sign_github(GITHUB_SECRET, body),
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-GitHub-Hook-ID": "461289032",
        "User-Agent": "GitHub-Hookshot/a1b2c3d",
    }


EVT = "evt_1PqYHb2eZvKYlo2CkQ4s8XJ1"


def stripe_event(*, event_id: str = EVT) -> dict[str, Any]:
    """Stripe's ``invoice.payment_failed`` event."""
    return {
        "id": event_id,
        "object": "event",
        "api_version": "2024-06-20",
        "created": 1714641247,
        "livemode": False,
        "pending_webhooks": 1,
        "type": "invoice.payment_failed",
        "data": {
            "object": {
                "id": "in_1PqYHa2eZvKYlo2C5uNvQe0m",
                "object": "invoice",
                "customer": "cus_QBr9kfd7X0pL2a",
                "customer_email": "billing@example.com",
                "amount_due": 4900,
                "amount_paid": 0,
                "currency": "usd",
                "attempt_count": 2,
                "status": "open",
                "hosted_invoice_url": "https://invoice.stripe.com/i/acct_1/test_YWNjdA",
            }
        },
    }


def stripe_headers(body: bytes, *, timestamp: int | None = None) -> dict[str, str]:
    when = int(time.time()) if timestamp is None else timestamp
    return {**sign_stripe(STRIPE_SECRET, body, timestamp=when), "User-Agent": "Stripe/1.0"}


async def assert_nothing_stored(server: Running, webhook_id: str) -> None:
    """No event of the webhook, and no agent run at all."""
    assert await events(server.store, webhook_id) == [], "a refused delivery stored an event"
    assert await attempts(server.store) == [], "a refused delivery started an agent run"


def accepted(response: httpx2.Response) -> str:
    """The event id of a 202 answer."""
    assert response.status_code == 202, f"{response.status_code}: {response.text}"
    assert response.headers["content-type"].split(";")[0] == "application/json"
    body = response.json()
    assert body["status"] == "queued", body
    assert set(body) == {"event_id", "status"}, body
    assert isinstance(body["event_id"], str), body
    assert body["event_id"], body
    return body["event_id"]


# --- accepted deliveries, down to the message --------------------------------------------------


async def test_github_workflow_run_becomes_one_message(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(
            server,
            "github-ci",
            prompt="Report failed CI runs: the workflow, branch and conclusion.",
            verification=VerificationScheme.GITHUB,
            secret=GITHUB_SECRET,
        )
        body = encode(workflow_run_payload())
        delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
        response = await post(hook.url, body, github_headers(body, delivery=delivery))
        event_id = accepted(response)

        (message,) = await wait_for_messages(server.store, 1)
        assert message.event_id == event_id
        assert message.channel == CHANNEL
        assert "workflow_run" in message.text, message.text
        assert "failure" in message.text, message.text
        assert "acme/shop" in message.text, message.text

        (event,) = await all_finished(server.store, hook.id)
        assert event.id == event_id
        assert event.status is EventStatus.DONE, event
        assert event.message_id == message.id
        assert event.body == body, "the event must keep the body exactly as received"
        assert event.dedup_key == f"github:{delivery}"
        assert event.headers["x-github-event"] == "workflow_run"
        assert "x-hub-signature-256" not in event.headers, "a signature was kept with the event"
        assert len(await messages(server.store)) == 1


async def test_stripe_invoice_payment_failed(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(
            server,
            "stripe-billing",
            prompt="Tell billing which customer's payment failed and the amount.",
            verification=VerificationScheme.STRIPE,
            secret=STRIPE_SECRET,
        )
        body = encode(stripe_event())
        event_id = accepted(await post(hook.url, body, stripe_headers(body)))

        (message,) = await wait_for_messages(server.store, 1)
        assert message.event_id == event_id
        assert "invoice.payment_failed" in message.text, message.text
        assert "cus_QBr9kfd7X0pL2a" in message.text, message.text
        (event,) = await all_finished(server.store, hook.id)
        assert event.status is EventStatus.DONE
        assert event.message_id == message.id
        assert event.dedup_key == "stripe:evt_1PqYHb2eZvKYlo2CkQ4s8XJ1"
        assert "stripe-signature" not in event.headers


async def test_standard_webhooks_custom_event(tmp_path: Path) -> None:
    secret = standard_secret()
    async with hook_server(tmp_path) as server:
        hook = await make_hook(
            server,
            "orders",
            verification=VerificationScheme.STANDARD_WEBHOOKS,
            secret=secret,
        )
        body = encode(
            {
                "type": "order.shipped",
                "timestamp": "2025-05-02T10:00:00Z",
                "data": {"order_id": "ord_8812", "carrier": "UPS", "tracking": "1Z999AA1"},
            }
        )
        headers = sign_standard_webhooks(
            secret, body, message_id="msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", timestamp=int(time.time())
        )
        event_id = accepted(await post(hook.url, body, headers))

        (message,) = await wait_for_messages(server.store, 1)
        assert message.event_id == event_id
        assert "order.shipped" in message.text, message.text
        (event,) = await all_finished(server.store, hook.id)
        assert event.status is EventStatus.DONE
        assert event.message_id == message.id
        assert event.dedup_key == "webhook-id:msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
        assert "webhook-signature" not in event.headers


async def test_shared_secret_and_slack_accepted_when_right(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        shared = await make_hook(
            server,
            "alerts",
            verification=VerificationScheme.SHARED_SECRET,
            secret=SHARED_SECRET,
        )
        slack = await make_hook(
            server, "slack-events", verification=VerificationScheme.SLACK, secret=SLACK_SECRET
        )
        alert = encode({"alert": "disk full", "host": "db-1", "severity": "critical"})
        first = accepted(await post(shared.url, alert, {"X-Webhook-Secret": SHARED_SECRET}))
        slack_body = encode(
            {
                "type": "event_callback",
                "team_id": "T061EG9R6",
                "api_app_id": "A0PNCHHK2",
                "event": {
                    "type": "app_mention",
                    "user": "U061F7AUR",
                    "text": "<@U0LAN0Z89> is the deploy done?",
                    "channel": "C0LAN2Q65",
                    "ts": "1515449522.000016",
                },
                "event_id": "Ev0LAN670R",
                "event_time": 1515449522,
            }
        )
        stamp = int(time.time())
        second = accepted(
            await post(slack.url, slack_body, sign_slack(SLACK_SECRET, slack_body, timestamp=stamp))
        )

        found = await wait_for_messages(server.store, 2)
        assert sorted(str(m.event_id) for m in found) == sorted([first, second])
        (alert_event,) = await all_finished(server.store, shared.id)
        assert alert_event.status is EventStatus.DONE
        assert SHARED_SECRET_HEADER not in alert_event.headers, "the shared secret was stored"
        assert all(SHARED_SECRET not in m.text for m in found)
        (slack_event,) = await all_finished(server.store, slack.id)
        assert slack_event.status is EventStatus.DONE


# --- refusals: status, code, and nothing stored ------------------------------------------------


async def test_bad_and_missing_signatures_are_refused(tmp_path: Path) -> None:
    std_secret = standard_secret()
    async with hook_server(tmp_path) as server:
        github = await make_hook(
            server, "gh", verification=VerificationScheme.GITHUB, secret=GITHUB_SECRET
        )
        stripe = await make_hook(
            server, "stripe", verification=VerificationScheme.STRIPE, secret=STRIPE_SECRET
        )
        standard = await make_hook(
            server, "std", verification=VerificationScheme.STANDARD_WEBHOOKS, secret=std_secret
        )
        shared = await make_hook(
            server, "shared", verification=VerificationScheme.SHARED_SECRET, secret=SHARED_SECRET
        )
        slack = await make_hook(
            server, "slack", verification=VerificationScheme.SLACK, secret=SLACK_SECRET
        )
        body = encode(workflow_run_payload())
        now = int(time.time())

        # GitHub: another secret, a tampered body, no signature, not sha256=.
        wrong = {**sign_github("not-the-secret", body), "X-GitHub-Delivery": "d-1"}
        assert_error(await post(github.url, body, wrong), 401, "invalid_signature")
        tampered = body.replace(b"failure", b"success")
        signed_other = {**sign_github(GITHUB_SECRET, body), "X-GitHub-Delivery": "d-2"}
        assert_error(await post(github.url, tampered, signed_other), 401, "invalid_signature")
        assert_error(
            await post(github.url, body, {"X-GitHub-Delivery": "d-3"}), 401, "invalid_signature"
        )
        sha1 = {"X-Hub-Signature": "sha1=" + "0" * 40, "X-GitHub-Delivery": "d-4"}
        assert_error(await post(github.url, body, sha1), 401, "invalid_signature")

        # Stripe: another secret, missing, and too far from now either way.
        stripe_body = encode(stripe_event())
        other = sign_stripe("whsec_other", stripe_body, timestamp=now)
        assert_error(await post(stripe.url, stripe_body, other), 401, "invalid_signature")
        assert_error(await post(stripe.url, stripe_body, {}), 401, "invalid_signature")
        for skew in STALE_SKEWS_S:
            stale = sign_stripe(STRIPE_SECRET, stripe_body, timestamp=int(time.time()) + skew)
            refused = assert_error(
                await post(stripe.url, stripe_body, stale), 401, "invalid_signature"
            )
            assert "300" in refused["error"]["message"], refused

        # Standard Webhooks: another key, missing, and too far from now either way.
        std_body = encode({"type": "ping", "data": {}})
        signed = sign_standard_webhooks(standard_secret(), std_body, message_id="m1", timestamp=now)
        assert_error(await post(standard.url, std_body, signed), 401, "invalid_signature")
        assert_error(await post(standard.url, std_body, {}), 401, "invalid_signature")
        for skew in STALE_SKEWS_S:
            stale = sign_standard_webhooks(
                std_secret, std_body, message_id=f"m{skew}", timestamp=int(time.time()) + skew
            )
            assert_error(await post(standard.url, std_body, stale), 401, "invalid_signature")

        # Shared secret: wrong, missing, or in the query string instead of the header.
        alert = encode({"alert": "disk full"})
        assert_error(
            await post(shared.url, alert, {"X-Webhook-Secret": "guess"}), 401, "invalid_signature"
        )
        assert_error(await post(shared.url, alert, {}), 401, "invalid_signature")
        in_query = f"{shared.url}?secret={SHARED_SECRET}"
        assert_error(await post(in_query, alert, {}), 401, "invalid_signature")

        # Slack: another secret, stale, missing.
        slack_body = encode({"type": "event_callback", "event": {"type": "message"}})
        assert_error(
            await post(slack.url, slack_body, sign_slack("nope", slack_body, timestamp=now)),
            401,
            "invalid_signature",
        )
        stale_slack = sign_slack(SLACK_SECRET, slack_body, timestamp=int(time.time()) - 301)
        assert_error(await post(slack.url, slack_body, stale_slack), 401, "invalid_signature")
        assert_error(await post(slack.url, slack_body, {}), 401, "invalid_signature")

        for hook in (github, stripe, standard, shared, slack):
            await assert_nothing_stored(server, hook.id)
        assert await messages(server.store) == []


async def test_body_limit_by_content_length(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(server, "small", max_body_bytes=SMALL_LIMIT)
        over = encode({"pad": "x" * SMALL_LIMIT})
        assert len(over) > SMALL_LIMIT
        refused = assert_error(await post(hook.url, over), 413, "payload_too_large")
        assert str(SMALL_LIMIT) in refused["error"]["message"]
        # One byte over, and exactly at the limit.
        filler = SMALL_LIMIT - len(encode({"pad": ""}))
        at_limit = encode({"pad": "x" * filler})
        assert len(at_limit) == SMALL_LIMIT
        one_over = encode({"pad": "x" * (filler + 1)})
        assert_error(await post(hook.url, one_over), 413, "payload_too_large")
        await assert_nothing_stored(server, hook.id)
        accepted(await post(hook.url, at_limit))


async def test_a_webhook_takes_at_most_2_mib_and_reads_it_in_short_steps(tmp_path: Path) -> None:
    """Parsing is one step of the event loop: 10 MiB took 0.25 to 0.6 s at the door."""
    most = 2 * 1024 * 1024
    async with hook_server(tmp_path) as server:
        with pytest.raises(ValidationError, match=f"max body bytes must be 1 to {most}, got"):
            await make_hook(server, "huge", max_body_bytes=most + 1)
        hook = await make_hook(server, "big", max_body_bytes=most, active=False, capture=True)
        # A webhook stored with more (as earlier versions allowed) takes no more either.
        await server.store.update(attrs.evolve(hook.webhook, max_body_bytes=10 * 1024 * 1024))
        # The most costly shape to parse: small objects, 8 bytes each.
        at_limit = ('{"rows":[' + ",".join(['{"a":1}'] * ((most - 10) // 8)) + "]}").encode()
        over = encode({"rows": [{"a": 1}] * (most // 7)})
        assert len(at_limit) <= most < len(over) < 10 * 1024 * 1024
        refused = assert_error(await post(hook.url, over), 413, "payload_too_large")
        assert str(most) in refused["error"]["message"]
        with watch_steps() as steps:
            response = await post(hook.url, at_limit)
        steps.assert_none_long()
        assert response.status_code == 202 and response.json()["status"] == "captured"


async def refused_uploads(url: str, status: int, code: str, *, uploads: int = UPLOADS) -> None:
    """Offer ``uploads`` chunked 50 MB bodies to ``url`` in turn; each must be refused early.

    The client may see the refusal, or a connection error when the server
    closes the connection under a body it will not read: both are fine. What
    is not: the server reading the whole upload, or neither reading nor
    closing (the sender stalls until its own timeout). Whether a broken
    server shows either is a race, so one upload proves little and many do.
    """
    for upload_no in range(1, uploads + 1):
        sent = 0

        async def upload() -> AsyncGenerator[bytes, None]:
            nonlocal sent
            chunk = b"[" + b"1," * (CHUNK // 2 - 1) + b"1"
            while sent < OFFERED:
                sent += len(chunk)
                yield chunk

        body = upload()
        response: httpx2.Response | None = None
        with trio.move_on_after(UPLOAD_S) as deadline:
            try:
                response = await post(url, body)
            except httpx2.TransportError:
                response = None  # the server cut the connection after refusing: fine
        await body.aclose()
        assert not deadline.cancelled_caught, (
            f"upload {upload_no}: after {sent} bytes the server neither answered, read on, "
            f"nor closed the connection within {UPLOAD_S} s: the refused upload ({status}) "
            "stalled (agentws bug, see the report: the door answers without draining the "
            "ASGI receive queue, and Hypercorn then blocks putting http.disconnect into it)"
        )
        if response is not None:
            assert_error(response, status, code)
        assert sent < CUT_OFF_BY, (
            f"upload {upload_no}: the server took {sent} bytes of a chunked body it refused "
            f"({status}): it must stop reading (agentws bug, see the report: once the door "
            "has answered, Hypercorn discards the rest of the upload, reading it to its end)"
        )


async def test_chunked_body_over_limit_is_cut_off(tmp_path: Path) -> None:
    """50 MB offered chunked, no Content-Length, to a 1 KiB webhook: 413, and the rest unread."""
    async with hook_server(tmp_path) as server:
        hook = await make_hook(server, "small", max_body_bytes=SMALL_LIMIT)
        await refused_uploads(hook.url, 413, "payload_too_large")
        await assert_nothing_stored(server, hook.id)


async def test_uploads_refused_before_their_body_are_cut_off(tmp_path: Path) -> None:
    """A draft webhook or an unknown token refuses a large upload without reading it through."""
    async with hook_server(tmp_path) as server:
        draft = await make_hook(server, "draft", active=False)
        unknown = server.base_url.rstrip("/") + "/hooks/agwh_" + secrets.token_urlsafe(32)
        await refused_uploads(draft.url, 403, "webhook_inactive", uploads=UPLOADS // 2)
        await refused_uploads(unknown, 404, "not_found", uploads=UPLOADS // 2)
        await assert_nothing_stored(server, draft.id)


# A body read timeout short enough for a test, and the trickle it must cut off:
# one byte every TRICKLE_S of a body that would take seconds to arrive.
BODY_TIMEOUT_S = 0.5
TRICKLE_S = 0.1
TRICKLED = encode({"event": "slow", "pad": "x" * 40})
# Slow clients at once (the finding held 600 open); each is cut off in well under this.
SLOW_CLIENTS = 20
CUT_S = 5.0


async def test_a_body_that_trickles_in_is_cut_off_with_408(tmp_path: Path) -> None:
    """A body not all there within AGENTWS_BODY_READ_TIMEOUT_S: 408, and the connection closed."""
    async with hook_server(tmp_path, AGENTWS_BODY_READ_TIMEOUT_S=str(BODY_TIMEOUT_S)) as server:
        hook = await make_hook(server, "slow")
        path = "/hooks/" + hook.url.rsplit("/hooks/", 1)[1]
        json_type = {"Content-Type": "application/json"}
        results = []

        async def slow_client(chunked: bool) -> None:
            head = request_head(
                path, server.base_url, json_type, length=None if chunked else len(TRICKLED)
            )
            results.append(
                await trickle(
                    server.base_url,
                    head,
                    TRICKLED,
                    every_s=TRICKLE_S,
                    bound_s=CUT_S,
                    chunked=chunked,
                )
            )

        async with trio.open_nursery() as nursery:
            for n in range(SLOW_CLIENTS):
                nursery.start_soon(slow_client, n % 2 == 1)
        assert len(results) == SLOW_CLIENTS
        for trickled in results:
            refused = assert_timed_out(trickled, body_length=len(TRICKLED))
            assert f"{BODY_TIMEOUT_S:g} s" in refused["error"]["message"], refused
            assert trickled.elapsed_s >= BODY_TIMEOUT_S
        await assert_nothing_stored(server, hook.id)
        accepted(await post(hook.url, encode({"event": "fast"})))


async def test_a_slow_steady_upload_within_the_timeout_is_accepted(tmp_path: Path) -> None:
    """The timeout bounds the whole body: a large body that arrives in time is fine."""
    async with hook_server(tmp_path, AGENTWS_BODY_READ_TIMEOUT_S="5") as server:
        hook = await make_hook(server, "steady")
        body = encode({"pad": "x" * (512 * 1024)})
        pieces = 20

        async def steady() -> AsyncGenerator[bytes, None]:
            step = len(body) // pieces + 1
            for at in range(0, len(body), step):
                yield body[at : at + step]
                await trio.sleep(0.05)  # a slow link: about a second for the body

        event_id = accepted(await post(hook.url, steady()))
        (event,) = await events(server.store, hook.id)
        assert event.id == event_id
        assert event.body == body


async def test_json_and_media_type_refusals(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(server, "plain")
        for not_json in (b"{not json", b"", b'{"a": NaN}', b"\xff\xfe{}", b'{"a": 1} trailing'):
            assert_error(await post(hook.url, not_json), 400, "invalid_json")
        for not_object in (b"[]", b'[{"a": 1}]', b'"text"', b"42", b"null", b"true"):
            refused = assert_error(await post(hook.url, not_object), 422, "not_an_object")
            assert "object" in refused["error"]["message"]
        body = encode({"ok": True})
        # Forms are taken (tests/e2e/test_webhook_forms.py); other media types are not.
        for media in ("text/plain", "multipart/form-data", "application/xml"):
            assert_error(
                await post(hook.url, body, {"Content-Type": media}), 415, "unsupported_media_type"
            )
        await assert_nothing_stored(server, hook.id)

        # JSON under the names senders really use is accepted.
        for media in ("application/json; charset=utf-8", "application/vnd.github+json"):
            accepted(await post(hook.url, body, {"Content-Type": media}))


async def test_draft_webhook_refused_until_activated(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(server, "draft", active=False)
        body = encode({"event": "ping"})
        refused = assert_error(await post(hook.url, body), 403, "webhook_inactive")
        assert "draft" in refused["error"]["message"]
        await assert_nothing_stored(server, hook.id)

        await set_active(server.store, "acme", hook.id, active=True, actor=ACTOR)
        event_id = accepted(await post(hook.url, body))
        (message,) = await wait_for_messages(server.store, 1)
        assert message.event_id == event_id

        await set_active(server.store, "acme", hook.name, active=False, actor=ACTOR)
        assert_error(await post(hook.url, body), 403, "webhook_inactive")


async def test_unknown_token_get_and_deleted_webhook(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(server, "doomed")
        body = encode({"event": "ping"})
        base = server.base_url.rstrip("/")
        for path in (
            "/hooks/agwh_" + secrets.token_urlsafe(32),
            "/hooks/",
            "/hooks/not.a.token",
            "/hooks/" + "a" * 201,
        ):
            assert_error(await post(base + path, body), 404, "not_found")

        for method in ("GET", "PUT", "DELETE"):
            response = await post(hook.url, b"", {}, method=method)
            assert_error(response, 405, "method_not_allowed")
            assert response.headers["allow"] == "POST"
        await assert_nothing_stored(server, hook.id)

        accepted(await post(hook.url, body))
        await all_finished(server.store, hook.id)
        await delete_webhook(server.store, "acme", hook.id, actor=ACTOR)
        refused = assert_error(await post(hook.url, body), 404, "not_found")
        assert "deleted" in refused["error"]["message"]


async def test_a_webhook_changed_elsewhere_is_refused_before_anything_else(
    tmp_path: Path,
) -> None:
    # The door remembers active webhooks; a change the door did not see (here
    # straight in the store, as another process would make it) still answers
    # first, also for deliveries that fail a later check.
    async with hook_server(tmp_path) as server:
        hook = await make_hook(
            server,
            "signed",
            verification=VerificationScheme.GITHUB,
            secret=GITHUB_SECRET,
            max_body_bytes=SMALL_LIMIT,
        )
        body = encode({"event": "ping"})
        bad_sig = {"X-Hub-Signature-256": "sha256=" + "0" * 64}
        big = encode({"log": "x" * SMALL_LIMIT})
        accepted(await post(hook.url, body, github_headers(body, delivery="d-1")))
        await all_finished(server.store, hook.id)

        await set_active(server.store, "acme", hook.id, active=False, actor=ACTOR)
        assert_error(await post(hook.url, body, bad_sig), 403, "webhook_inactive")
        assert_error(
            await post(hook.url, body, github_headers(body, delivery="d-2")),
            403,
            "webhook_inactive",
        )
        await set_active(server.store, "acme", hook.id, active=True, actor=ACTOR)
        accepted(await post(hook.url, body, github_headers(body, delivery="d-3")))
        assert_error(await post(hook.url, body, bad_sig), 401, "invalid_signature")

        await delete_webhook(server.store, "acme", hook.id, actor=ACTOR)
        assert_error(await post(hook.url, body, bad_sig), 404, "not_found")
        assert_error(
            await post(hook.url, big, github_headers(big, delivery="d-4")), 404, "not_found"
        )
        assert_error(
            await post(hook.url, body, github_headers(body, delivery="d-5")), 404, "not_found"
        )
        assert await events(server.store, hook.id) == []  # deleted with their webhook


async def test_order_of_checks(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        draft = await make_hook(server, "draft", active=False, max_body_bytes=SMALL_LIMIT)
        signed = await make_hook(
            server,
            "signed",
            verification=VerificationScheme.GITHUB,
            secret=GITHUB_SECRET,
            max_body_bytes=SMALL_LIMIT,
            rate_per_min=1,
            burst=1,
        )
        big = b"x" * (SMALL_LIMIT * 4)
        bad_sig = {"X-Hub-Signature-256": "sha256=" + "0" * 64}
        text = {"Content-Type": "text/plain"}

        # The method before the token; the token before anything about the body.
        unknown = server.base_url.rstrip("/") + "/hooks/agwh_unknown"
        assert_error(await post(unknown, big, text, method="GET"), 405, "method_not_allowed")
        assert_error(await post(unknown, big, text), 404, "not_found")
        # A draft is refused whatever its body: too large, wrong type, not JSON.
        assert_error(await post(draft.url, big, text), 403, "webhook_inactive")
        assert_error(await post(draft.url, b"nope", text), 403, "webhook_inactive")
        # Size before media type; media type before JSON.
        assert_error(await post(signed.url, big, {**text, **bad_sig}), 413, "payload_too_large")
        assert_error(
            await post(signed.url, b"nope", {**text, **bad_sig}), 415, "unsupported_media_type"
        )
        # JSON before the signature.
        assert_error(await post(signed.url, b"{oops", bad_sig), 400, "invalid_json")
        assert_error(await post(signed.url, b"[1, 2]", bad_sig), 422, "not_an_object")
        # The signature before the rate limit: forged deliveries do not use up its tokens.
        body = encode({"zen": "Keep it logically awesome."})
        for _ in range(3):
            assert_error(await post(signed.url, body, bad_sig), 401, "invalid_signature")
        for hook in (draft, signed):
            await assert_nothing_stored(server, hook.id)
        headers = github_headers(body, delivery="first", event="ping")
        accepted(await post(signed.url, body, headers))
        # Over the rate limit: refused before the delivery id is looked at.
        again = github_headers(body, delivery="first", event="ping")
        assert_error(await post(signed.url, body, again), 429, "rate_limited")


# --- redelivery --------------------------------------------------------------------------------


async def test_github_redelivery_is_a_duplicate(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(
            server, "github-ci", verification=VerificationScheme.GITHUB, secret=GITHUB_SECRET
        )
        body = encode(workflow_run_payload())
        delivery = "2b7e1d60-6a5c-11ef-8a3f-1d2c9b3e4f50"
        first = accepted(await post(hook.url, body, github_headers(body, delivery=delivery)))
        (message,) = await wait_for_messages(server.store, 1)
        assert message.event_id == first

        again = await post(hook.url, body, github_headers(body, delivery=delivery))
        assert again.status_code == 200, again.text
        assert again.json() == {"event_id": first, "status": "duplicate"}

        other_body = encode(workflow_run_payload(run_id=1))
        conflict = await post(hook.url, other_body, github_headers(other_body, delivery=delivery))
        refused = assert_error(conflict, 409, "idempotency_conflict")
        assert first in refused["error"]["message"]

        # Once the worker is idle there is still one event, one run and one message.
        (event,) = await all_finished(server.store, hook.id)
        assert event.id == first
        assert event.status is EventStatus.DONE
        assert len(await attempts(server.store)) == 1
        assert [m.event_id for m in await messages(server.store)] == [first]

        # A new delivery id with the same body is a new event.
        new = accepted(await post(hook.url, body, github_headers(body, delivery="another")))
        assert new != first
        await wait_for_messages(server.store, 2)


async def test_idempotency_key_and_stripe_event_id(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        plain = await make_hook(server, "plain")
        stripe = await make_hook(
            server, "stripe", verification=VerificationScheme.STRIPE, secret=STRIPE_SECRET
        )
        body = encode({"event": "deploy.finished", "service": "api", "status": "ok"})
        key = {"Idempotency-Key": "deploy-7731"}
        first = accepted(await post(plain.url, body, key))
        again = await post(plain.url, body, key)
        assert again.status_code == 200, again.text
        assert again.json() == {"event_id": first, "status": "duplicate"}
        changed = encode({"event": "deploy.finished", "service": "api", "status": "failed"})
        assert_error(await post(plain.url, changed, key), 409, "idempotency_conflict")
        too_long = {"Idempotency-Key": "k" * 201}
        assert_error(await post(plain.url, body, too_long), 400, "invalid_delivery_id")
        empty = {"Idempotency-Key": ""}
        assert_error(await post(plain.url, body, empty), 400, "invalid_delivery_id")

        # Stripe retries re-sign the same body with a new timestamp: the event id dedups.
        stripe_body = encode(stripe_event())
        now = int(time.time())
        evt = accepted(
            await post(stripe.url, stripe_body, stripe_headers(stripe_body, timestamp=now - 5))
        )
        retry = await post(stripe.url, stripe_body, stripe_headers(stripe_body, timestamp=now))
        assert retry.status_code == 200, retry.text
        assert retry.json() == {"event_id": evt, "status": "duplicate"}
        other = encode(stripe_event(event_id="evt_1PqYHb2eZvKYlo2COTHER000"))
        accepted(await post(stripe.url, other, stripe_headers(other)))

        found = await wait_for_messages(server.store, 3)
        (plain_event,) = await all_finished(server.store, plain.id)
        assert plain_event.id == first
        assert len(await all_finished(server.store, stripe.id)) == 2
        found = await messages(server.store)
        assert len(found) == 3, [m.event_id for m in found]
        assert len(await attempts(server.store)) == 3


async def test_a_replay_with_a_new_idempotency_key_is_still_a_duplicate(tmp_path: Path) -> None:
    """The signed delivery id outranks an unsigned Idempotency-Key (DESIGN §5, issue 21)."""
    secret = standard_secret()
    async with hook_server(tmp_path) as server:
        standard = await make_hook(
            server, "orders", verification=VerificationScheme.STANDARD_WEBHOOKS, secret=secret
        )
        stripe = await make_hook(
            server, "stripe", verification=VerificationScheme.STRIPE, secret=STRIPE_SECRET
        )
        github = await make_hook(
            server, "github", verification=VerificationScheme.GITHUB, secret=GITHUB_SECRET
        )
        now = int(time.time())
        order = encode({"type": "order.shipped", "data": {"order_id": "ord_8812"}})
        stripe_body = encode(stripe_event())
        run = encode(workflow_run_payload())
        # (hook, body, the captured request's headers, the key the signed id gives)
        captured = [
            (
                standard,
                order,
                sign_standard_webhooks(secret, order, message_id="msg_1", timestamp=now),
                "webhook-id:msg_1",
            ),
            (stripe, stripe_body, stripe_headers(stripe_body, timestamp=now), "stripe:" + EVT),
            (github, run, github_headers(run, delivery="d-1"), "github:d-1"),
        ]
        for hook, body, headers, key in captured:
            first = accepted(await post(hook.url, body, {**headers, "Idempotency-Key": "a"}))
            for replayed in ({**headers, "Idempotency-Key": "b"}, headers):
                again = await post(hook.url, body, replayed)
                assert again.status_code == 200, (hook.name, again.text)
                assert again.json() == {"event_id": first, "status": "duplicate"}
            (event,) = await all_finished(server.store, hook.id)
            assert event.dedup_key == key, hook.name
        assert len(await attempts(server.store)) == 3


async def test_an_identical_slack_replay_is_a_duplicate(tmp_path: Path) -> None:
    """Slack carries no delivery id: its timestamp and signature are the key (issue 21)."""
    async with hook_server(tmp_path) as server:
        hook = await make_hook(
            server, "slack", verification=VerificationScheme.SLACK, secret=SLACK_SECRET
        )
        body = encode({"type": "event_callback", "event_id": "Ev0LAN670R", "event_time": 1})
        now = int(time.time())
        headers = sign_slack(SLACK_SECRET, body, timestamp=now)
        first = accepted(await post(hook.url, body, headers))
        for replayed in (headers, {**headers, "Idempotency-Key": "new"}):
            again = await post(hook.url, body, replayed)
            assert again.status_code == 200, again.text
            assert again.json() == {"event_id": first, "status": "duplicate"}
        # The signature's hex is case-insensitive: another spelling is the same request.
        upper = {**headers, "X-Slack-Signature": headers["X-Slack-Signature"].upper()}
        upper["X-Slack-Signature"] = "v0=" + upper["X-Slack-Signature"][3:]
        assert (await post(hook.url, body, upper)).status_code == 200
        # Signed again at another second, it is another request (as Slack's retries are).
        later = sign_slack(SLACK_SECRET, body, timestamp=now - 1)
        second = accepted(await post(hook.url, body, later))
        assert second != first
        found = await all_finished(server.store, hook.id)
        assert len(found) == 2
        signature = headers["X-Slack-Signature"].removeprefix("v0=")
        assert {e.dedup_key for e in found} >= {f"slack:{now}:{signature}"}


# --- rate limit --------------------------------------------------------------------------------


async def test_rate_limit(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(server, "bursty", rate_per_min=60, burst=2)
        ids = [accepted(await post(hook.url, encode({"n": n}))) for n in range(2)]
        refused = await post(hook.url, encode({"n": 2}))
        body = assert_error(refused, 429, "rate_limited")
        retry_after = refused.headers["retry-after"]
        assert retry_after.isdigit(), f"Retry-After must be whole seconds: {retry_after!r}"
        assert int(retry_after) >= 1
        assert "60" in body["error"]["message"]
        stored = await events(server.store, hook.id)
        assert sorted(e.id for e in stored) == sorted(ids), "the refused delivery was stored"
        await all_finished(server.store, hook.id)
        assert len(await messages(server.store)) == 2


# --- shutdown ----------------------------------------------------------------------------------


async def test_idle_server_stops_without_waiting_out_the_grace(tmp_path: Path) -> None:
    grace_s = 2.0
    async with hook_server(tmp_path, AGENTWS_SHUTDOWN_GRACE_S=str(grace_s)) as server:
        hook = await make_hook(server, "ping")
        accepted(await post(hook.url, encode({"event": "ping"})))
        await wait_for_messages(server.store, 1)
        await all_finished(server.store, hook.id)
        stopping_at = trio.current_time()
    took = trio.current_time() - stopping_at
    assert took < grace_s / 2, (
        f"an idle server took {took:.2f} s to stop with a {grace_s} s grace period: a task of "
        "the service (ingest batcher, event worker) waits to be cancelled at the deadline "
        "instead of ending when asked to stop"
    )
