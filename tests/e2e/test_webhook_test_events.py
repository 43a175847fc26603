"""Test events: samples signed as their senders sign, taken by the door's checks, run.

Each sample's signature is first checked by the sender's own library, as
the sender's receivers check it: ``@octokit/webhooks-methods`` and
``stripe`` under Node, ``standardwebhooks`` and ``slack_sdk`` in Python.
Then a serving agentws sends each kind of webhook a test event (admin API
and CLI): the door's answer, the event it stored (headers, delivery id) and
the message its run posted; and the refusals a sender would get (a draft, a
paused webhook, the rate limit).
"""

from __future__ import annotations

import base64
import json
import secrets
import shlex
import time
from pathlib import Path

import attrs
import httpx2
import pytest
import trio
from slack_sdk.signature import SignatureVerifier
from standardwebhooks.webhooks import Webhook as StandardWebhook

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.domain.models import AuditEntry, Event, EventStatus, VerificationScheme, Webhook
from agentws.domain.rules import utcnow
from agentws.domain.sample_deliveries import (
    SampleDelivery,
    SampleKind,
    default_sample,
    sample_delivery,
)
from agentws.domain.signatures import verify
from tests.e2e.mcp_support import Running
from tests.e2e.node_support import NODE_DIR, require_node
from tests.e2e.run_support import finished
from tests.e2e.webhook_support import hook_server, make_hook
from tests.in_process import run_cli_beside
from tests.support import clean_env

SECRETS: dict[VerificationScheme, str | None] = {
    VerificationScheme.NONE: None,
    VerificationScheme.SHARED_SECRET: "a-shared-secret-7c1d",
    VerificationScheme.GITHUB: "gh-test-secret-1f2e",
    VerificationScheme.STRIPE: "whsec_test_5a6b7c8d9e",
    VerificationScheme.STANDARD_WEBHOOKS: "whsec_" + base64.b64encode(b"k" * 24).decode(),
    VerificationScheme.SLACK: "8f742231b10e8888abcd99yyyzzz85a5",
}
SIGNED = [s for s in SECRETS if s not in (VerificationScheme.NONE,)]


async def senders_verdict(scheme: VerificationScheme, secret: str, sample: SampleDelivery) -> str:
    """What the sender's own library says of ``sample``'s signature: "valid" or why not."""
    headers = sample.headers
    if scheme in (VerificationScheme.GITHUB, VerificationScheme.STRIPE):
        node = require_node("@octokit/webhooks-methods")
        require_node("stripe")
        request = {
            "scheme": scheme.value,
            "secret": secret,
            "body": sample.body.decode(),
            "headers": headers,
        }
        done = await trio.run_process(
            [node, str(NODE_DIR / "verify_webhook.mjs")],
            stdin=json.dumps(request).encode(),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode()
    if scheme is VerificationScheme.STANDARD_WEBHOOKS:
        StandardWebhook(secret).verify(sample.body, headers)
        return "valid"
    if scheme is VerificationScheme.SLACK:
        verifier = SignatureVerifier(secret)
        stamp, signature = headers["x-slack-request-timestamp"], headers["x-slack-signature"]
        return "valid" if verifier.is_valid(sample.body, stamp, signature) else "invalid"
    assert scheme is VerificationScheme.SHARED_SECRET
    return "valid" if headers["x-webhook-secret"] == secret else "invalid"


@pytest.mark.parametrize("scheme", SIGNED, ids=[s.value for s in SIGNED])
@pytest.mark.parametrize("sample", list(SampleKind), ids=[k.value for k in SampleKind])
async def test_every_sample_is_signed_as_the_sender_signs_it(
    scheme: VerificationScheme, sample: SampleKind
) -> None:
    secret = SECRETS[scheme]
    assert secret is not None
    delivery = sample_delivery(
        sample, scheme, secret, now=int(time.time()), nonce=secrets.token_hex(16)
    )
    assert await senders_verdict(scheme, secret, delivery) == "valid"
    # ... and by ours, with the same headers a request would carry.
    assert verify(scheme, secret, delivery.body, delivery.headers, now=time.time()).scheme is scheme


async def _api(server: Running) -> httpx2.AsyncClient:
    await create_admin(server.store, "alice", actor="t")
    _, token = await create_admin_token(server.store, "alice", "tests", actor="t")
    return httpx2.AsyncClient(
        base_url=f"{server.base_url}/api/v1",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )


# What each sample's stored event says of its sender (headers kept, delivery id).
EXPECTED: dict[SampleKind, tuple[dict[str, str], str]] = {
    SampleKind.GITHUB: ({"x-github-event": "ping"}, "github:"),
    SampleKind.STRIPE: ({}, "stripe:evt_test_"),
    SampleKind.STANDARD_WEBHOOKS: ({}, "webhook-id:msg_"),
    SampleKind.SLACK: ({}, "slack:"),
    SampleKind.PLAIN: ({}, "idempotency:test_"),
}


async def test_a_test_event_of_each_scheme_verifies_and_runs(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server, await _api(server) as api:
        for scheme, secret in SECRETS.items():
            await make_hook(server, f"t-{scheme.value}", verification=scheme, secret=secret)
        for scheme in SECRETS:
            sent = await api.post(f"/workspaces/acme/webhooks/t-{scheme.value}/test", json={})
            assert sent.status_code == 200, sent.text
            answer = sent.json()
            kind = default_sample(scheme)
            assert answer["sample"] == kind.value
            assert answer["status"] == 202, answer
            assert answer["answer"] == {"event_id": answer["event_id"], "status": "queued"}
            event = await finished(server.store, answer["event_id"])
            assert event.status is EventStatus.DONE, event.error
            headers, key = EXPECTED[kind]
            assert headers.items() <= event.headers.items()
            assert event.dedup_key is not None
            assert event.dedup_key.startswith(key), (scheme, event.dedup_key)
            assert event.message_id is not None
        audit = await server.store.select(AuditEntry, action="webhook.test")
        assert len(audit) == len(SECRETS) and {e.detail["status"] for e in audit} == {202}


async def test_a_named_sample_and_the_refusals_a_sender_would_get(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server, await _api(server) as api:
        secret = SECRETS[VerificationScheme.STRIPE]
        issued = await make_hook(
            server,
            "billing",
            verification=VerificationScheme.STRIPE,
            secret=secret,
            rate_per_min=1,
            burst=1,
        )
        # A GitHub ping's body, signed the way this webhook checks (Stripe's).
        sent = (
            await api.post("/workspaces/acme/webhooks/billing/test", json={"sample": "github"})
        ).json()
        assert (sent["sample"], sent["status"]) == ("github", 202)
        event = await server.store.get(Event, sent["event_id"])
        assert json.loads(event.body)["zen"] and event.headers["x-github-event"] == "ping"
        # Its bucket is empty now: the door says so, as to a sender.
        limited = (await api.post("/workspaces/acme/webhooks/billing/test", json={})).json()
        assert limited["status"] == 429 and limited["event_id"] is None
        assert limited["answer"]["error"]["code"] == "rate_limited"
        # A draft refuses it; a paused webhook says why.
        stored = await server.store.get(Webhook, issued.id)
        await server.store.update(attrs.evolve(stored, active=False))
        draft = (await api.post("/workspaces/acme/webhooks/billing/test", json={})).json()
        assert (draft["status"], draft["answer"]["error"]["code"]) == (403, "webhook_inactive")
        assert "draft" in draft["answer"]["error"]["message"]
        await server.store.update(attrs.evolve(stored, active=False, paused_at=utcnow()))
        paused = (await api.post("/workspaces/acme/webhooks/billing/test", json={})).json()
        assert paused["status"] == 403
        assert paused["answer"]["error"]["code"] == "webhook_inactive"
        assert "paused" in paused["answer"]["error"]["message"]
        unknown = await api.post("/workspaces/acme/webhooks/billing/test", json={"sample": "x"})
        assert unknown.status_code == 400


async def test_the_cli_sends_a_test_event_and_shows_the_message(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        settings = server.runtime.settings
        env = clean_env(
            AGENTWS_SECRET_KEY=settings.secret_key or "",
            AGENTWS_DATABASE_URL=settings.database_url,
        )

        async def agentws(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
            done = await run_cli_beside([*args], cwd=Path.cwd(), env=env, input=stdin.decode())
            return done.returncode, done.stdout, done.stderr

        # What `webhook create --verify github` says to try works as printed: a plain curl
        # would carry no signature (401).
        code, created, err = await agentws(
            *("webhook", "create", "acme", "--name", "ci", "--channel", "ops"),
            *("--prompt", "Say what happened.", "--verify", "github", "--secret-stdin"),
            stdin=SECRETS[VerificationScheme.GITHUB].encode(),
        )
        assert code == 0, err
        assert "curl" not in created, created
        (printed,) = [line.strip() for line in created.splitlines() if "agentws webhook" in line]
        assert printed.startswith("agentws webhook test "), created
        code, out, err = await agentws(*shlex.split(printed)[1:])
        assert code == 0, err
        assert "Sent a github test event to webhook 'ci'" in out, out
        assert "The door answered 202" in out and "posted to local:ops:" in out, out

        assert "ping" in out.split("posted to local:ops:")[1], out
