"""Rotating a webhook's URL and signing secret without downtime, end to end.

Deliveries keep arriving while the URL is rotated: none is lost (every one
is answered 202 and stored) and none is doubled (one event, one message
each). The old URL works through the grace and answers 404 after it, also
for a process that remembered it. During a secret's grace either secret
verifies, as each sender signs: Stripe with both (its own library), a
Standard Webhooks sender (``standardwebhooks``) and GitHub
(``@octokit/webhooks-methods``) with whichever they have. Every event
records the URL and secret generation it came through, which the CLI and
the admin API report.
"""

from __future__ import annotations

import html
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2
import trio
from standardwebhooks.webhooks import Webhook as StandardWebhook

from agentws.admins.access import create_admin_token
from agentws.domain.models import EventStatus, VerificationScheme
from agentws.webhooks.rotation import end_grace, rotate_secret, rotate_url
from tests.e2e.node_support import NODE_DIR, require_node
from tests.e2e.oauth_support import admin_browser, hidden_field
from tests.e2e.polling import wait_until
from tests.e2e.test_webhook_forms import octokit_signature
from tests.e2e.webhook_support import (
    ACTOR,
    all_finished,
    assert_error,
    events,
    hook_server,
    make_hook,
    messages,
    post,
    wait_for_messages,
)
from tests.support import run_agentws

SENDERS = 4
# Deliveries each sender makes before, across and after the rotation.
PER_SENDER = 30
STRIPE_OLD = "whsec_old_4eC39HqLyjWDarjtT1zdp7dc"
STRIPE_NEW = "whsec_new_9fK21LmNoPqRsTuVwXyZ0123"
GITHUB_OLD = "gh-old-secret-1f6c2a"
GITHUB_NEW = "gh-new-secret-77b0e4"


def _new_url(old: str, issued: str, base_url: str) -> str:
    """The issued URL (built on the configured base) on the real bound address."""
    return base_url.rstrip("/") + "/hooks/" + issued.rpartition("/hooks/")[2]


async def test_a_rotation_with_deliveries_in_flight_loses_none_and_doubles_none(
    tmp_path: Path,
) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(server, "orders", rate_per_min=100_000, burst=10_000)
        urls = {"current": hook.url}
        rotated = trio.Event()
        answers: dict[str, int] = {}

        async def sender(n: int) -> None:
            for i in range(PER_SENDER):
                key = f"delivery-{n}-{i}"
                # Half the senders move to the new URL as soon as it is issued,
                # the others only for their last third: both URLs stay in use.
                url = urls["current"] if n % 2 == 0 or i > 2 * PER_SENDER // 3 else hook.url
                body = json.dumps({"type": "order.paid", "order": key}).encode()
                response = await post(url, body, {"Idempotency-Key": key})
                answers[key] = response.status_code
                if i == PER_SENDER // 3 and n == 0:
                    await rotated.wait()

        async def rotator() -> None:
            issued = await rotate_url(
                server.store, server.runtime.settings, "acme", "orders", actor=ACTOR
            )
            urls["current"] = _new_url(hook.url, issued.url, server.base_url)
            rotated.set()

        async with trio.open_nursery() as nursery:
            for n in range(SENDERS):
                nursery.start_soon(sender, n)
            nursery.start_soon(rotator)

        assert len(answers) == SENDERS * PER_SENDER
        assert set(answers.values()) == {202}, {k: v for k, v in answers.items() if v != 202}
        stored = await all_finished(server.store, hook.id, timeout_s=30)
        keys = [e.dedup_key for e in stored]
        assert sorted(keys) == sorted(f"idempotency:{k}" for k in answers), "lost or doubled"
        assert all(e.status is EventStatus.DONE for e in stored)
        by_generation = {g: sum(e.url_generation == g for e in stored) for g in (1, 2)}
        assert by_generation[1] > 0 and by_generation[2] > 0, by_generation
        assert sum(by_generation.values()) == len(stored)
        posted = await wait_for_messages(server.store, len(stored))
        assert sorted(str(m.event_id) for m in posted) == sorted(e.id for e in stored)

        # A sender retrying an old delivery through the new URL is told it is a duplicate.
        body = json.dumps({"type": "order.paid", "order": "delivery-1-0"}).encode()
        again = await post(urls["current"], body, {"Idempotency-Key": "delivery-1-0"})
        assert again.status_code == 200, again.text
        assert again.json()["status"] == "duplicate"

        # Ending the grace stops the old URL at once, though this process remembers it.
        await end_grace(server.store, "acme", "orders", which="url", actor=ACTOR)
        fresh = json.dumps({"type": "order.paid", "order": "late"}).encode()
        assert_error(await post(hook.url, fresh, {"Idempotency-Key": "late"}), 404, "not_found")
        assert (await post(urls["current"], fresh, {"Idempotency-Key": "late"})).status_code == 202
        # The refused one left nothing: one more event and one more message, not two.
        await wait_for_messages(server.store, len(stored) + 1)
        finished = await all_finished(server.store, hook.id)
        assert [e.dedup_key for e in finished].count("idempotency:late") == 1
        assert len(finished) == len(stored) + 1
        assert len(await messages(server.store)) == len(stored) + 1


async def test_the_old_url_answers_404_once_its_grace_is_over(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(server, "alerts", rate_per_min=100_000, burst=10_000)
        body = b'{"alert": "disk full"}'
        assert (await post(hook.url, body)).status_code == 202  # remembered from here on
        issued = await rotate_url(
            server.store,
            server.runtime.settings,
            "acme",
            "alerts",
            grace=timedelta(seconds=1),
            actor=ACTOR,
        )
        new = _new_url(hook.url, issued.url, server.base_url)
        again = {"Idempotency-Key": "again"}
        assert (await post(hook.url, body, again)).status_code == 202
        until = issued.webhook.previous_token_until
        assert until is not None

        async def old_url_status() -> int:
            # The same delivery again: 200 duplicate while the URL works, stores nothing.
            return (await post(hook.url, body, again)).status_code

        await wait_until(old_url_status, lambda s: s == 404, what="the old URL's 404", timeout_s=5)
        assert datetime.now(UTC) >= until
        assert (await post(new, body)).status_code == 202
        generations = sorted(e.url_generation or 0 for e in await events(server.store, hook.id))
        assert generations == [1, 1, 2], generations

        # A rotation without grace stops the URL at once, remembered or not.
        issued = await rotate_url(
            server.store,
            server.runtime.settings,
            "acme",
            "alerts",
            grace=timedelta(0),
            actor=ACTOR,
        )
        assert_error(await post(new, body), 404, "not_found")
        newest = _new_url(hook.url, issued.url, server.base_url)
        assert (await post(newest, body)).status_code == 202


async def stripe_signature(secrets: list[str], body: bytes, timestamp: int) -> str:
    """``Stripe-Signature`` from Stripe's own library, a v1 per secret (as during a roll)."""
    node = require_node("stripe")
    request = json.dumps({"secrets": secrets, "body": body.decode(), "timestamp": timestamp})
    done = await trio.run_process(
        [node, str(NODE_DIR / "sign_stripe.mjs")],
        stdin=request.encode(),
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def stripe_body(n: int) -> bytes:
    return json.dumps(
        {
            "id": f"evt_rotation_{n}",
            "object": "event",
            "type": "charge.succeeded",
            "data": {"object": {"object": "charge", "id": f"ch_{n}", "amount": 4200}},
        }
    ).encode()


async def test_during_a_secret_rotation_either_secret_verifies(tmp_path: Path) -> None:
    standard_old = "whsec_" + "b2xkLXN0YW5kYXJkLXNlY3JldC0xMjM0NTY3OA=="
    standard_new = "whsec_" + "bmV3LXN0YW5kYXJkLXNlY3JldC04NzY1NDMyMQ=="
    async with hook_server(tmp_path) as server:
        stripe = await make_hook(
            server, "billing", verification=VerificationScheme.STRIPE, secret=STRIPE_OLD
        )
        standard = await make_hook(
            server,
            "orders",
            verification=VerificationScheme.STANDARD_WEBHOOKS,
            secret=standard_old,
        )
        github = await make_hook(
            server, "ci", verification=VerificationScheme.GITHUB, secret=GITHUB_OLD
        )
        push = b'{"ref": "refs/heads/main", "commits": []}'

        async def github_headers(secret: str, delivery: str) -> dict[str, str]:
            return {
                "X-Hub-Signature-256": await octokit_signature(secret, push),
                "X-GitHub-Event": "push",
                "X-GitHub-Delivery": delivery,
            }

        # A delivery before the rotation: this process remembers the webhook (and
        # its old secret); the new secret must verify at once all the same.
        first = await post(github.url, push, await github_headers(GITHUB_OLD, "d-first"))
        assert first.status_code == 202
        keys = server.runtime.keys
        for name, secret in (("billing", STRIPE_NEW), ("orders", standard_new), ("ci", GITHUB_NEW)):
            await rotate_secret(server.store, keys, "acme", name, secret=secret, actor=ACTOR)

        now = int(time.time())
        # Stripe signs with both secrets while it rolls; then with the new one only.
        both = await stripe_signature([STRIPE_NEW, STRIPE_OLD], stripe_body(1), now)
        assert (
            await post(stripe.url, stripe_body(1), {"Stripe-Signature": both})
        ).status_code == 202
        old_only = await stripe_signature([STRIPE_OLD], stripe_body(2), now)
        assert (
            await post(stripe.url, stripe_body(2), {"Stripe-Signature": old_only})
        ).status_code == 202
        new_only = await stripe_signature([STRIPE_NEW], stripe_body(3), now)
        assert (
            await post(stripe.url, stripe_body(3), {"Stripe-Signature": new_only})
        ).status_code == 202

        def standard_headers(secret: str, body: bytes, msg_id: str) -> dict[str, str]:
            stamp = datetime.now(UTC)
            signature = StandardWebhook(secret).sign(msg_id, stamp, body.decode())
            return {
                "webhook-id": msg_id,
                "webhook-timestamp": str(int(stamp.timestamp())),
                "webhook-signature": signature,
            }

        order = b'{"type": "order.shipped", "timestamp": "2026-11-25T10:00:00Z", "data": {}}'
        for msg_id, secret in (("msg_old", standard_old), ("msg_new", standard_new)):
            headers = standard_headers(secret, order, msg_id)
            assert (await post(standard.url, order, headers)).status_code == 202

        for delivery, secret in (("d-new", GITHUB_NEW), ("d-old", GITHUB_OLD)):
            headers = await github_headers(secret, delivery)
            assert (await post(github.url, push, headers)).status_code == 202

        def generations(hook_events: list[object]) -> list[int | None]:
            return sorted(e.secret_generation for e in hook_events)  # type: ignore[attr-defined]

        assert generations(await events(server.store, stripe.id)) == [1, 2, 2]
        assert generations(await events(server.store, standard.id)) == [1, 2]
        assert generations(await events(server.store, github.id)) == [1, 1, 2]

        # Once the grace is ended, the old secret verifies nothing.
        for name in ("billing", "orders", "ci"):
            await end_grace(server.store, "acme", name, which="secret", actor=ACTOR)
        late = await stripe_signature([STRIPE_OLD], stripe_body(4), int(time.time()))
        assert_error(
            await post(stripe.url, stripe_body(4), {"Stripe-Signature": late}),
            401,
            "invalid_signature",
        )
        headers = standard_headers(standard_old, order, "msg_late")
        assert_error(await post(standard.url, order, headers), 401, "invalid_signature")
        headers = await github_headers(GITHUB_OLD, "d-late")
        assert_error(await post(github.url, push, headers), 401, "invalid_signature")


async def test_the_cli_and_the_api_rotate_and_report(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(
            server, "ci", verification=VerificationScheme.GITHUB, secret=GITHUB_OLD
        )
        database = server.runtime.settings.database_url
        env = {"AGENTWS_SECRET_KEY": server.runtime.settings.secret_key or ""}
        code, out, err = await run_agentws(
            tmp_path, database, "webhook", "rotate", "acme", "ci", "--grace", "2h", "--json", **env
        )
        assert code == 0, err
        rotated = json.loads(out)
        assert rotated["url_generation"] == 2
        assert rotated["previous_url_until"] is not None
        new = _new_url(hook.url, rotated["url"], server.base_url)
        push = b'{"ref": "refs/heads/main", "commits": []}'
        for url, delivery in ((hook.url, "a"), (new, "b"), (new, "c")):
            headers = {
                "X-Hub-Signature-256": await octokit_signature(GITHUB_OLD, push),
                "X-GitHub-Event": "push",
                "X-GitHub-Delivery": delivery,
            }
            assert (await post(url, push, headers)).status_code == 202

        code, out, err = await run_agentws(
            tmp_path, database, "webhook", "rotation", "acme", "ci", **env
        )
        assert code == 0, err
        assert "deliveries since the rotation through it: 1 (last " in out, out
        assert "through the new one: 2" in out, out

        async with admin_browser(server) as browser:
            # A grace typed in the dashboard's form is read as strictly: a form error, never a 500.
            assert (await browser.sign_in()).status_code == 302
            page = await browser.http.get(f"/dashboard/w/acme/webhooks/{hook.id}")
            csrf = hidden_field(page.text, "csrf")
            for grace in ("²h", "99999999999999999999d"):
                answer = await browser.http.post(
                    "/dashboard/w/acme/webhooks/ci/rotate", data={"csrf": csrf, "grace": grace}
                )
                assert answer.status_code == 302, answer.text
                shown = (await browser.http.get(answer.headers["location"])).text
                assert "grace must be" in html.unescape(shown), grace
        _, admin = await create_admin_token(server.store, "alice", "tests", actor="t")
        async with httpx2.AsyncClient(
            base_url=f"{server.base_url}/api/v1",
            headers={"Authorization": f"Bearer {admin}"},
            timeout=10,
        ) as api:
            status = (await api.get("/workspaces/acme/webhooks/ci/rotation")).json()
            assert status["via_previous_url"] == 1 and status["via_new_url"] == 2, status
            answer = await api.post(
                "/workspaces/acme/webhooks/ci/rotate-secret",
                json={"secret": GITHUB_NEW, "grace": "1h"},
            )
            assert answer.status_code == 200, answer.text
            assert answer.json()["secret_generation"] == 2
            assert answer.json()["previous_secret_until"] is not None
            refused = await api.post(
                "/workspaces/acme/webhooks/ci/rotate-secret", json={"secret": GITHUB_NEW}
            )
            assert refused.status_code == 400, refused.text
            answer = await api.post("/workspaces/acme/webhooks/ci/rotate", json={"grace": "0"})
            assert answer.status_code == 200, answer.text
            newest = _new_url(hook.url, answer.json()["url"], server.base_url)
            assert answer.json()["previous_url_until"] is None
            for grace in ("40d", "²h", "99999999999999999999d", "\u0663h"):
                bad = await api.post("/workspaces/acme/webhooks/ci/rotate", json={"grace": grace})
                assert bad.status_code == 400, bad.text
                assert bad.json()["error"]["message"].startswith("grace must be"), bad.text
            ended = await api.post("/workspaces/acme/webhooks/ci/end-grace", json={})
            assert ended.json()["previous_secret_until"] is None
        # Only the newest URL works now: the previous one had no grace.
        headers = {
            "X-Hub-Signature-256": await octokit_signature(GITHUB_NEW, push),
            "X-GitHub-Event": "push",
            "X-GitHub-Delivery": "d",
        }
        assert_error(await post(new, push, headers), 404, "not_found")
        assert (await post(newest, push, headers)).status_code == 202
