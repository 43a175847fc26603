"""The delivery log end to end: every request to a webhook's URL, refusals included.

A serving agentws is sent deliveries refused for each reason (too large,
not JSON nor a form, not JSON, not an object, a bad signature, an
idempotency conflict, over the rate limit, a draft, another method), some
accepted and a redelivery. Each appears in the webhook's log with its
status, reason, size and source, accepted ones and duplicates name their
event, and no credential or signature the requests carried is stored
anywhere in the database. ``/metrics`` counts the refusals per webhook;
the admin API and ``agentws webhook deliveries`` list the same rows. With
a small ``AGENTWS_DELIVERY_LOG_KEEP`` the log stays bounded once the
overview's rollup has counted its rows. Standard
Webhooks deliveries are signed by the sender's own library
(``standardwebhooks``).
"""

from __future__ import annotations

import base64
import json
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
from prometheus_client.parser import text_string_to_metric_families
from standardwebhooks.webhooks import Webhook as StandardWebhook

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.domain.delivery_log import Delivery
from agentws.domain.models import Event, VerificationScheme
from agentws.webhooks.delivery_log import trim_every
from tests.e2e.mcp_support import Running
from tests.e2e.polling import wait_until
from tests.e2e.rollup_support import roll_now
from tests.e2e.webhook_support import Hook, assert_error, hook_server, make_hook, post
from tests.in_process import run_cli_beside
from tests.support import clean_env

SHARED_SECRET = "shared-secret-value-7d1e0c"
WRONG_SECRET = "guess-the-secret-5a9c31"
BEARER = "tok-bearer-8c2f1b77"
COOKIE_VALUE = "ck-41aa90e3"
LIMIT = 1024
LOOPBACK = "127.0.0.1"


def standard_key() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def standard_headers(key: str, body: bytes, message_id: str) -> dict[str, str]:
    """What a Standard Webhooks sender sends, signed by the ``standardwebhooks`` library."""
    now = datetime.now(UTC)
    signature = StandardWebhook(key).sign(message_id, now, body.decode())
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
    }


async def logged(server: Running, hook: Hook, n: int) -> list[Delivery]:
    """The webhook's log, newest first, once it holds ``n`` rows (refusals are not waited for)."""
    return await wait_until(
        lambda: server.store.webhook_deliveries(hook.id, limit=1000),
        lambda rows: len(rows) >= n,
        what=f"{n} rows in the delivery log of {hook.name}",
    )


async def raw_rows(server: Running) -> list[dict[str, Any]]:
    return await server.store.database.fetch("SELECT * FROM webhook_deliveries ORDER BY id")


async def refusal_counts(server: Running) -> dict[tuple[str, str], float]:
    async with httpx2.AsyncClient(timeout=10) as http:
        page = await http.get(f"{server.base_url}/metrics")
    assert page.status_code == 200, page.text
    counts: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(page.text):
        for sample in family.samples:
            if sample.name == "agentws_webhook_refusals_total":
                counts[(sample.labels["webhook"], sample.labels["reason"])] = sample.value
    return counts


async def cli_text(server: Running, *args: str, **env: str) -> str:
    """What ``agentws webhook deliveries acme ARGS`` prints, on the server's database."""
    done = await run_cli_beside(
        ["webhook", "deliveries", "acme", *args],
        cwd=Path.cwd(),
        env=clean_env(AGENTWS_DATABASE_URL=server.runtime.settings.database_url, **env),
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    return done.stdout


async def cli_deliveries(server: Running, *args: str, **env: str) -> Any:
    """``agentws webhook deliveries acme ARGS --json``, parsed."""
    return json.loads(await cli_text(server, *args, "--json", **env))


async def test_refusals_for_every_reason_are_logged_with_their_sizes_and_no_secret(
    tmp_path: Path,
) -> None:
    key = standard_key()
    async with hook_server(tmp_path) as server:
        shared = await make_hook(
            server,
            "shared",
            verification=VerificationScheme.SHARED_SECRET,
            secret=SHARED_SECRET,
            max_body_bytes=LIMIT,
            rate_per_min=60,
            burst=3,
        )
        standard = await make_hook(
            server, "standard", verification=VerificationScheme.STANDARD_WEBHOOKS, secret=key
        )
        draft = await make_hook(server, "draft", active=False)
        quiet = await make_hook(server, "quiet")
        signed = {"X-Webhook-Secret": SHARED_SECRET, "User-Agent": "acme-sender/2.1"}

        too_large = json.dumps({"pad": "x" * 2000}).encode()
        assert_error(await post(shared.url, too_large, signed), 413, "payload_too_large")
        as_text = {**signed, "Content-Type": "text/plain"}
        assert_error(await post(shared.url, b"hello", as_text), 415, "unsupported_media_type")
        assert_error(await post(shared.url, b'{"broken": ', signed), 400, "invalid_json")
        assert_error(await post(shared.url, b"[1, 2]", signed), 422, "not_an_object")
        credentials = {
            "X-Webhook-Secret": WRONG_SECRET,
            "Authorization": f"Bearer {BEARER}",
            "Cookie": f"session={COOKIE_VALUE}",
        }
        order = b'{"order": 1}'
        assert_error(await post(shared.url, order, credentials), 401, "invalid_signature")
        keyed = {**signed, "Idempotency-Key": "order-1"}
        first = await post(shared.url, order, keyed)
        assert first.status_code == 202, first.text
        event_id = first.json()["event_id"]
        again = await post(shared.url, order, keyed)
        assert (again.status_code, again.json()["event_id"]) == (200, event_id)
        other = b'{"order": 2}'
        assert_error(await post(shared.url, other, keyed), 409, "idempotency_conflict")
        assert_error(await post(shared.url, b'{"order": 3}', signed), 429, "rate_limited")
        assert_error(await post(shared.url, b"", method="GET"), 405, "method_not_allowed")

        assert_error(await post(draft.url, order), 403, "webhook_inactive")
        std_body = b'{"type": "invoice.paid", "data": {"id": "in_1"}}'
        forged = standard_headers(standard_key(), std_body, "msg_forged")
        assert_error(await post(standard.url, std_body, forged), 401, "invalid_signature")
        genuine = standard_headers(key, std_body, "msg_1")
        std_accepted = await post(standard.url, std_body, genuine)
        assert std_accepted.status_code == 202, std_accepted.text
        unknown = shared.url.rsplit("/", 1)[0] + "/agwh_" + "x" * 40
        assert_error(await post(unknown, order), 404, "not_found")

        # The shared-secret webhook's log, newest first: every request, and what it was.
        rows = await logged(server, shared, 10)
        assert [(d.status, d.reason) for d in rows] == [
            (405, "method_not_allowed"),
            (429, "rate_limited"),
            (409, "idempotency_conflict"),
            (200, "duplicate"),
            (202, "queued"),
            (401, "invalid_signature"),
            (422, "not_an_object"),
            (400, "invalid_json"),
            (415, "unsupported_media_type"),
            (413, "payload_too_large"),
        ]
        by_reason = {d.reason: d for d in rows}
        assert by_reason["payload_too_large"].body_bytes == len(too_large)
        assert by_reason["unsupported_media_type"].body_bytes == len(b"hello")
        assert by_reason["invalid_json"].body_bytes == len(b'{"broken": ')
        assert by_reason["queued"].body_bytes == len(order)
        assert by_reason["idempotency_conflict"].body_bytes == len(other)
        # Accepted deliveries and redeliveries name their event; a conflict names the
        # event that holds its key.
        assert by_reason["queued"].event_id == event_id
        assert by_reason["duplicate"].event_id == event_id
        assert by_reason["idempotency_conflict"].event_id == event_id
        assert await server.store.get(Event, event_id)
        assert {d.event_id for d in rows} == {event_id, None}
        assert {d.source for d in rows} == {LOOPBACK}
        assert all(d.received_at <= e.received_at for d, e in zip(rows[1:], rows, strict=False))
        # Headers: names all there; what says what the request is, as sent; credentials hidden.
        refused = by_reason["invalid_signature"].headers
        assert refused["content-type"] == "application/json"
        assert refused["content-length"] == str(len(order))
        assert refused["x-webhook-secret"] == "***"
        assert refused["authorization"] == "***"
        assert refused["cookie"] == "***"
        # An accepted delivery is its event, with the headers the event keeps.
        assert by_reason["queued"].headers == {
            "content-type": "application/json",
            "user-agent": "acme-sender/2.1",
            "idempotency-key": "order-1",
        }
        assert by_reason["queued"].id is None
        assert by_reason["duplicate"].headers["x-webhook-secret"] == "***"

        draft_rows = await logged(server, draft, 1)
        assert [(d.status, d.reason, d.body_bytes) for d in draft_rows] == [
            (403, "webhook_inactive", len(order))
        ]
        std_rows = await logged(server, standard, 2)
        assert [(d.status, d.reason) for d in std_rows] == [
            (202, "queued"),
            (401, "invalid_signature"),
        ]
        assert std_rows[0].event_id == std_accepted.json()["event_id"]
        assert std_rows[0].headers["webhook-id"] == "msg_1"
        assert "webhook-signature" not in std_rows[0].headers
        assert std_rows[1].headers["webhook-signature"] == "v1,***"
        assert await server.store.webhook_deliveries(quiet.id, limit=10) == []

        # Nothing else was logged (the unknown URL has no log), and no credential or
        # signature is anywhere in the log, nor anywhere in the database.
        stored = await raw_rows(server)
        # The rows: every answer but the accepted deliveries (which are their events).
        assert len(stored) == (10 - 1) + 1 + (2 - 1)
        hidden = [
            SHARED_SECRET,
            WRONG_SECRET,
            BEARER,
            COOKIE_VALUE,
            key,
            forged["webhook-signature"].split(",", 1)[1],
            genuine["webhook-signature"].split(",", 1)[1],
        ]
        text = repr(stored)
        assert not [s for s in hidden if s in text], text
        database = Path(server.runtime.settings.database_url.removeprefix("sqlite:///"))
        files = b"".join(p.read_bytes() for p in database.parent.glob(database.name + "*"))
        assert not [s for s in hidden if s.encode() in files]

        # /metrics: refusals per webhook and reason; none for the unknown URL.
        counts = await refusal_counts(server)
        mine = {reason: n for (webhook, reason), n in counts.items() if webhook == shared.id}
        assert mine == {
            "payload_too_large": 1,
            "unsupported_media_type": 1,
            "invalid_json": 1,
            "not_an_object": 1,
            "invalid_signature": 1,
            "idempotency_conflict": 1,
            "rate_limited": 1,
            "method_not_allowed": 1,
        }
        assert counts[(draft.id, "webhook_inactive")] == 1
        assert counts[(standard.id, "invalid_signature")] == 1
        assert "not_found" not in {reason for _, reason in counts}

        # The admin API and the CLI list the same rows.
        await create_admin(server.store, "alice", actor="t")
        _, token = await create_admin_token(server.store, "alice", "tests", actor="t")
        async with httpx2.AsyncClient(
            base_url=f"{server.base_url}/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        ) as api:
            listed = await api.get(
                "/workspaces/acme/webhooks/shared/deliveries", params={"limit": 200}
            )
            assert listed.status_code == 200, listed.text
            items = listed.json()["items"]
            assert [(i["status"], i["reason"]) for i in items] == [
                (d.status, d.reason) for d in rows
            ]
            assert items[4]["event_id"] == event_id and items[4]["accepted"] is True
            assert items[5]["headers"]["x-webhook-secret"] == "***"
            only_refused = await api.get(
                f"/workspaces/acme/webhooks/{shared.id}/deliveries", params={"status": "refused"}
            )
            assert [i["reason"] for i in only_refused.json()["items"]] == [
                d.reason for d in rows if d.status >= 300
            ]
            signature = await api.get(
                "/workspaces/acme/webhooks/shared/deliveries", params={"status": "401"}
            )
            assert [i["reason"] for i in signature.json()["items"]] == ["invalid_signature"]
            bad = await api.get(
                "/workspaces/acme/webhooks/shared/deliveries", params={"status": "maybe"}
            )
            assert_error(bad, 400, "invalid")
            missing = await api.get("/workspaces/acme/webhooks/nope/deliveries")
            assert_error(missing, 404, "not_found")

        listed_cli = await cli_deliveries(server, "shared")
        assert [(i["id"], i["status"], i["reason"]) for i in listed_cli] == [
            (i["id"], i["status"], i["reason"]) for i in items
        ]
        text = await cli_text(server, "shared", "--status", "refused", "--limit", "3")
        lines = text.splitlines()
        assert lines[0] == (
            f"Deliveries to webhook 'shared' ({shared.id}), newest first; "
            "the log keeps the newest 500 per webhook, for 30 days."
        )
        assert lines[1].split() == ["RECEIVED_AT", "STATUS", "REASON", "BYTES", "SOURCE", "EVENT"]
        assert [line.split()[1:3] for line in lines[2:]] == [
            ["405", "method_not_allowed"],
            ["429", "rate_limited"],
            ["409", "idempotency_conflict"],
        ]
        rate_limited = await cli_deliveries(server, "shared", "--status", "429")
        assert [i["reason"] for i in rate_limited] == ["rate_limited"]
        two = await cli_deliveries(server, "shared", "--status", "accepted", "--limit", "1")
        assert [(i["status"], i["event_id"]) for i in two] == [(200, event_id)]


async def test_the_log_keeps_the_newest_deliveries_only(tmp_path: Path) -> None:
    keep = 20
    async with hook_server(tmp_path, AGENTWS_DELIVERY_LOG_KEEP=str(keep)) as server:
        hook = await make_hook(server, "busy", rate_per_min=100_000, burst=100_000)
        sent: list[tuple[int, str | None]] = []
        for n in range(45):
            if n % 3:
                refused = await post(hook.url, b'{"n": ')
                assert_error(refused, 400, "invalid_json")
                sent.append((400, None))
            else:
                answer = await post(hook.url, json.dumps({"n": n}).encode())
                assert answer.status_code == 202, answer.text
                sent.append((202, answer.json()["event_id"]))
        # The rows (refusals) are trimmed as they come, once the overview's
        # rollup has counted them (it rolls a minute and a half later at most:
        # here now): at most the bound and the rows since the last trim.
        await wait_until(
            lambda: raw_rows(server),
            lambda rows: len(rows) == 30,
            what="every refusal's row kept until counted",
        )
        await roll_now(server.runtime)
        for _ in range(trim_every(keep)):
            refused = await post(hook.url, b'{"n": ')
            assert_error(refused, 400, "invalid_json")
            sent.append((400, None))
        bound = keep + trim_every(keep) - 1
        await wait_until(
            lambda: raw_rows(server),
            lambda rows: len(rows) <= bound,
            what=f"the log trimmed to {bound} rows at most",
        )
        # Listed: the newest 20 answers, refusals and events together.
        newest = await cli_deliveries(
            server, "busy", "--limit", "100", AGENTWS_DELIVERY_LOG_KEEP=str(keep)
        )
        assert [(i["status"], i["event_id"]) for i in newest] == sent[::-1][:keep]
