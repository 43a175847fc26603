"""The admin JSON API under ``/api/v1``, on a serving agentws, with httpx2 and schemathesis.

Credentials are an admin API token (``agwa_…``) made as ``agentws admin
token create`` makes it; schemathesis runs as its own process against
``/api/v1/openapi.json`` and must find no 5xx and no answer that differs
from the document.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx2
import pytest
import trio

from agentws.admins.access import create_admin_token, revoke_admin_token
from agentws.admins.accounts import create_admin
from agentws.domain.models import AdminToken, AuditEntry, EventStatus, Webhook
from tests.e2e.mcp_support import Running, running, sdk_session
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.e2e.run_support import deliver, finished
from tests.e2e.slow_client_support import assert_timed_out, request_head, trickle
from tests.e2e.webhook_support import Hook
from tests.support import clean_env
from tests.tiers import examples


async def _admin_token(server: Running, username: str = "alice") -> str:
    await create_admin(server.store, username, actor="t")
    _, secret = await create_admin_token(server.store, username, "tests", actor="t")
    return secret


def _client(server: Running, token: str | None) -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.AsyncClient(base_url=f"{server.base_url}/api/v1", headers=headers, timeout=10)


async def test_a_body_that_trickles_in_is_cut_off_with_408(tmp_path: Path) -> None:
    """The API reads bodies under AGENTWS_BODY_READ_TIMEOUT_S too, as the two doors do."""
    async with running(tmp_path, AGENTWS_BODY_READ_TIMEOUT_S="0.5") as server:
        token = await _admin_token(server)
        body = b'{"name": "slow", "channel": "local:ops", "prompt": "' + b"x" * 40 + b'"}'
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        path = "/api/v1/workspaces/acme/webhooks"
        head = request_head(path, server.base_url, headers, length=len(body))
        trickled = await trickle(server.base_url, head, body, every_s=0.1, bound_s=5.0)
        assert_timed_out(trickled, body_length=len(body))
        # Refused before its body is read, a request's connection is closed at once too.
        anonymous = request_head(path, server.base_url, {}, length=len(body))
        refused = await trickle(server.base_url, anonymous, body, every_s=0.1, bound_s=5.0)
        assert refused.reply.closed, refused.reply
        assert refused.reply.statuses == [401], refused.reply
        assert refused.sent < len(body), refused.reply
        assert await server.store.select(Webhook) == []


async def test_webhooks_tokens_and_events_through_the_api(tmp_path: Path) -> None:
    async with running(tmp_path) as server:
        token = await _admin_token(server)
        async with _client(server, token) as api:
            listed = (await api.get("/workspaces")).json()
            assert [w["slug"] for w in listed["items"]] == ["acme"]
            assert listed["next_cursor"] is None

            created = await api.post(
                "/workspaces/acme/webhooks",
                json={
                    "name": "ci",
                    "channel": "local:ops",
                    "prompt": "Summarise.",
                    "rate_per_min": 600,
                },
            )
            assert created.status_code == 201, created.text
            webhook = created.json()
            assert webhook["url"].split("/hooks/")[1].startswith("agwh_")
            assert (webhook["name"], webhook["channel"], webhook["active"]) == (
                "ci",
                "local:ops",
                True,
            )

            # The URL works: an event, a message, and the event in the API's log.
            path = "/hooks/" + webhook["url"].split("/hooks/")[1]
            issued = Hook(await server.store.get(Webhook, webhook["id"]), server.base_url + path)
            event_id = await deliver(issued, {"build": 7, "status": "failed"})
            assert (await finished(server.store, event_id)).status is EventStatus.DONE
            events = (await api.get("/workspaces/acme/events", params={"webhook": "ci"})).json()
            assert [e["id"] for e in events["items"]] == [event_id]
            shown = (await api.get(f"/events/{event_id}")).json()
            assert shown["status"] == "done" and shown["message_id"]

            patched = await api.patch(
                "/workspaces/acme/webhooks/ci", json={"prompt": "Only failures.", "active": False}
            )
            assert patched.status_code == 200, patched.text
            assert (patched.json()["prompt"], patched.json()["active"]) == ("Only failures.", False)

            # MCP tokens: shown once, listed without the secret, revoked.
            issued_token = await api.post(
                "/workspaces/acme/groups/ops/tokens", json={"name": "cursor", "scope": "read"}
            )
            assert issued_token.status_code == 201
            secret = issued_token.json()["token"]
            assert secret.startswith("agws_")
            tokens = (await api.get("/workspaces/acme/groups/ops/tokens")).json()["items"]
            assert "cursor" in [t["name"] for t in tokens]
            assert secret not in str(tokens)
            revoked = await api.delete(
                f"/workspaces/acme/groups/ops/tokens/{issued_token.json()['id']}"
            )
            assert revoked.json()["revoked"] is True

            deleted = await api.delete("/workspaces/acme/webhooks/ci")
            assert deleted.json() == {"id": webhook["id"], "deleted": True}
            gone = await api.get("/workspaces/acme/webhooks/ci")
            assert gone.status_code == 404
            assert gone.json()["error"]["code"] == "not_found"

        audit = await server.store.select(AuditEntry, actor="admin:alice")
        assert {"webhook.create", "webhook.update", "token.create", "token.revoke"} <= {
            e.action for e in audit
        }


async def test_errors_are_json_and_credentials_are_checked(tmp_path: Path) -> None:
    async with running(tmp_path) as server:
        token = await _admin_token(server)
        async with _client(server, None) as anonymous:
            refused = await anonymous.get("/workspaces")
            assert refused.status_code == 401
            assert refused.json()["error"]["code"] == "unauthorized"
            assert refused.headers["www-authenticate"].startswith("Bearer")
            # The document is public: it is how clients learn the API.
            document = (await anonymous.get("/openapi.json")).json()
            assert document["openapi"] == "3.1.0"
        async with _client(server, "agwa_not-a-token") as wrong:
            assert (await wrong.get("/workspaces")).status_code == 401
        async with _client(server, token) as api:
            bad_json = await api.post(
                "/workspaces/acme/webhooks",
                content=b"{nope",
                headers={"Content-Type": "application/json"},
            )
            assert bad_json.status_code == 400
            assert bad_json.json()["error"]["code"] == "invalid_json"
            wrong_type = await api.post(
                "/workspaces/acme/webhooks", json={"name": 5, "channel": "ops", "prompt": "p"}
            )
            assert wrong_type.status_code == 400 and "'name' must be a str" in wrong_type.text
            missing = await api.post("/workspaces/acme/webhooks", json={"name": "x"})
            assert missing.json()["error"]["message"] == "'channel' is required"
            assert (await api.get("/workspaces", params={"limit": "0"})).status_code == 400
            assert (await api.get("/nope")).status_code == 404
            for name in ("a", "b", "c"):
                await api.post(
                    "/workspaces/acme/webhooks",
                    json={"name": name, "channel": "ops", "prompt": "p"},
                )
            first = (await api.get("/workspaces/acme/webhooks", params={"limit": 2})).json()
            assert [w["name"] for w in first["items"]] == ["a", "b"]
            rest = await api.get(
                "/workspaces/acme/webhooks", params={"limit": 2, "cursor": first["next_cursor"]}
            )
            assert [w["name"] for w in rest.json()["items"]] == ["c"]
            assert rest.json()["next_cursor"] is None
            conflict = await api.post(
                "/workspaces/acme/webhooks", json={"name": "a", "channel": "ops", "prompt": "p"}
            )
            assert conflict.status_code == 409

            # A body is held to a size before it is read: 256 KiB (room for a prompt of
            # 20,000 characters, however escaped), twice a document's largest body and
            # 64 KiB to add a document (a JSON string escapes " and \ as two bytes).
            document = {"title": "Quotes", "body": '"' * (1024 * 1024)}
            added = await api.post("/workspaces/acme/libraries/handbook/documents", json=document)
            assert added.status_code == 201, added.text
        auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        hooks, documents = "/api/v1/workspaces/acme/webhooks", "/api/v1/workspaces/acme/"
        documents += "libraries/handbook/documents"
        for path, length, chunked, limit in [
            (hooks, 5 << 20, False, "256.0 KiB"),  # a length announced: refused unread
            (hooks, 5 << 20, True, "256.0 KiB"),  # chunked: refused once past the limit
            (documents, 3 << 20, False, "2.1 MiB"),
        ]:
            head = request_head(path, server.base_url, auth, length=None if chunked else length)
            body = b" " * length
            sent = await trickle(
                server.base_url,
                head,
                body,
                piece=1 << 16,
                every_s=0.01,
                bound_s=10,
                chunked=chunked,
            )
            assert sent.reply.closed and sent.sent < length // 2, sent.reply
            (response,) = sent.reply.final
            assert response.status == 413, sent.reply
            assert response.headers["connection"] == "close", sent.reply
            error = json.loads(response.body)["error"]
            assert error["code"] == "too_large", error
            assert error["message"] == f"the body is over {limit}, the most this endpoint reads"

        # A revoked token stops working at once.
        (admin_token,) = [t for t in await server.store.select(AdminToken)]
        await revoke_admin_token(server.store, admin_token.id, actor="t")
        async with _client(server, token) as api:
            assert (await api.get("/workspaces")).status_code == 401


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_a_queued_call_is_listed_and_approved_through_the_api(tmp_path: Path) -> None:
    state = ThirdParty([tool("send", "Send")])
    loopback = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
    async with running(tmp_path, **loopback) as server, third_party_server(state) as url:
        await attach_remote(server.store, url, {})
        token = await _admin_token(server)
        async with sdk_session(server, "streamable") as session:
            queued = await session.call_tool("third_send", {"q": "hello"})
        approval_id = (queued.structured_content or {})["approval_id"]
        async with _client(server, token) as api:
            pending = (await api.get("/approvals", params={"status": "pending"})).json()["items"]
            assert [(a["id"], a["tool"], a["arguments_preview"], a["caller"]) for a in pending] == [
                (approval_id, "third_send", '{"q": "hello"}', "token tests")
            ]
            shown = (await api.get(f"/approvals/{approval_id}")).json()
            assert shown["arguments"] == {"q": "hello"}
            approved = await api.post(f"/approvals/{approval_id}/approve", json={"reason": "ok"})
            assert approved.status_code == 200, approved.text
            assert approved.json()["status"] == "executed", approved.json()["error"]
            assert approved.json()["decided_by"] == "admin:alice"
            again = await api.post(f"/approvals/{approval_id}/deny", json={})
            assert again.status_code == 409
            # The list is the queue, as `agentws approval list` is: pending unless told.
            assert (await api.get("/approvals")).json()["items"] == []
            executed = await api.get("/approvals", params={"status": "executed"})
            assert [a["id"] for a in executed.json()["items"]] == [approval_id]
            every = await api.get("/approvals", params={"status": "all"})
            assert [a["id"] for a in every.json()["items"]] == [approval_id]
            refused = await api.get("/approvals", params={"status": "done"})
            assert refused.status_code == 400 and "all" in refused.json()["error"]["message"]
            missing = await api.post("/approvals/apr_nope/approve", json={})
            assert missing.status_code == 404
    assert state.calls == ["send"]


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_tools_permissions_libraries_and_channels_through_the_api(tmp_path: Path) -> None:
    state = ThirdParty([tool("lookup", "Look things up")])
    loopback = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
    async with running(tmp_path, **loopback) as server, third_party_server(state) as url:
        await attach_remote(server.store, url, {})
        token = await _admin_token(server)
        async with _client(server, token) as api:
            tools = (await api.get("/workspaces/acme/groups/ops/tools")).json()["items"]
            lookup = next(t for t in tools if t["name"] == "third_lookup")
            assert (lookup["capability"], lookup["label"]) == ("write", "unlabeled")
            labeled = await api.put(
                "/workspaces/acme/tools/third_lookup/label", json={"label": "read"}
            )
            assert labeled.json() == {"name": "third_lookup", "label": "read"}
            denied = await api.put(
                "/workspaces/acme/tools/third_lookup/permission",
                json={"permission": "deny", "group": "ops"},
            )
            assert denied.status_code == 200
            tools = (await api.get("/workspaces/acme/groups/ops/tools")).json()["items"]
            lookup = next(t for t in tools if t["name"] == "third_lookup")
            assert (lookup["capability"], lookup["permission"]) == ("read", "deny")
            assert lookup["permission_source"] == "group"
            reset = await api.put(
                "/workspaces/acme/tools/third_lookup/permission", json={"group": "ops"}
            )
            assert reset.json()["permission"] is None
            refused = await api.put(
                "/workspaces/acme/tools/nope/permission", json={"permission": "allow"}
            )
            assert refused.status_code == 404

            added = await api.post(
                "/workspaces/acme/libraries/handbook/documents",
                json={"title": "On-call", "body": "# On-call\nPage Ada.", "policy": "spine"},
            )
            assert added.status_code == 201, added.text
            assert (added.json()["slug"], added.json()["policy"]) == ("on-call", "spine")
            shelves = (await api.get("/workspaces/acme/libraries")).json()["items"]
            (handbook,) = [s for s in shelves if s["slug"] == "handbook"]
            assert "on-call" in [d["slug"] for d in handbook["documents"]]
            assert handbook["groups"] == ["ops"]

            created = await api.post(
                "/workspaces/acme/webhooks", json={"name": "ci", "channel": "ops", "prompt": "p"}
            )
            path = "/hooks/" + created.json()["url"].split("/hooks/")[1]
            stored = await server.store.get(Webhook, created.json()["id"])
            event_id = await deliver(Hook(stored, server.base_url + path), {"n": 1})
            await finished(server.store, event_id)
            messages = (await api.get("/workspaces/acme/channels/local:ops/messages")).json()
            assert [m["event_id"] for m in messages["items"]] == [event_id]
            bad = await api.get("/workspaces/acme/channels/slack:general/messages")
            assert bad.status_code == 400


async def test_schemathesis_finds_no_server_error_and_no_undocumented_answer(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as server:
        token = await _admin_token(server)
        done = await trio.run_process(
            [
                str(Path(sys.executable).parent / "schemathesis"),
                "run",
                f"{server.base_url}/api/v1/openapi.json",
                "--url",
                f"{server.base_url}/api/v1",
                "--header",
                f"Authorization: Bearer {token}",
                "--checks",
                "not_a_server_error,response_schema_conformance,content_type_conformance",
                "--max-examples",
                # Per operation; the coverage phase's boundary cases come on top.
                str(examples(15, 5)),
                "--seed",
                "1",
                "--request-timeout",
                "10",
            ],
            env=clean_env(SCHEMATHESIS_TELEMETRY="false", NO_COLOR="1"),
            cwd=tmp_path,  # its cache directory goes there
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    output = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 0, output[-6000:]


async def _private_hook_connector(server: Running) -> None:
    """Incoming-webhook connector ``alerts`` at a private address, saved while allow-listed."""
    from agentws.connectors.admin import ConnectorSecret, add_connector
    from agentws.domain.allowlist import Allowlist
    from agentws.domain.models import ConnectorKind
    from agentws.settings.secret_box import SecretBox

    await add_connector(
        server.store,
        "acme",
        "alerts",
        kind=ConnectorKind.INCOMING_WEBHOOK,
        url=None,
        headers={},
        secret=ConnectorSecret("http://10.0.0.5:8080/services/T0/B0/PrivateHookToken"),
        box=SecretBox.from_settings(server.runtime.settings),
        allowlist=Allowlist.parse("10.0.0.0/8"),
        actor="t",
    )


async def test_a_channel_whose_url_is_not_public_is_refused_on_create_and_update(
    tmp_path: Path,
) -> None:
    from agentws.settings.secret_box import ensure_key_file

    ensure_key_file(tmp_path)
    async with running(tmp_path, AGENTWS_DATA_DIR=str(tmp_path)) as server:
        await _private_hook_connector(server)
        token = await _admin_token(server)
        async with _client(server, token) as api:
            body = {"name": "ci", "channel": "webhook:alerts", "prompt": "p"}
            refused = await api.post("/workspaces/acme/webhooks", json=body)
            assert refused.status_code == 400, refused.text
            error = refused.json()["error"]
            assert error["code"] == "unsafe_url"
            assert "http://10.0.0.5:8080" in error["message"]
            assert "AGENTWS_CONNECTOR_ALLOWLIST" in error["message"]
            assert "PrivateHookToken" not in refused.text
            local = await api.post("/workspaces/acme/webhooks", json={**body, "channel": "ops"})
            assert local.status_code == 201, local.text
            moved = await api.patch(
                "/workspaces/acme/webhooks/ci", json={"channel": "webhook:alerts"}
            )
            assert moved.status_code == 400, moved.text
            assert moved.json()["error"]["code"] == "unsafe_url"
        assert [w.channel for w in await server.store.select(Webhook)] == ["local:ops"]


#: A JSON string escape no UTF-8 text can hold: an unpaired UTF-16 surrogate.
LONE = "\\ud800"


async def test_lone_surrogates_in_any_body_are_invalid_json(tmp_path: Path) -> None:
    # Each once answered 500: the value reached the store (or an error message) as text.
    async with running(tmp_path) as server:
        token = await _admin_token(server)
        hook = '{"name": "%s", "channel": "local:ops", "prompt": "%s", "verification": "%s"%s}'
        bodies = [
            ("POST", "/workspaces/acme/webhooks", hook % (LONE, "p", "none", "")),
            ("POST", "/workspaces/acme/webhooks", hook % ("ci", f"a{LONE}b", "none", "")),
            (
                "POST",
                "/workspaces/acme/webhooks",
                hook % ("ci", "p", "shared_secret", f', "secret": "{LONE}x"'),
            ),
            ("PATCH", "/workspaces/acme/webhooks/ci", f'{{"prompt": "{LONE}"}}'),
            ("POST", "/workspaces/acme/groups/ops/tokens", f'{{"name": "{LONE}"}}'),
            (
                "PUT",
                "/workspaces/acme/tools/t/permission",
                f'{{"group": "{LONE}", "permission": "allow"}}',
            ),
            ("POST", "/approvals/apr_x/approve", f'{{"reason": "{LONE}"}}'),
            ("POST", "/approvals/apr_x/deny", f'{{"reason": "ok {LONE}"}}'),
            # Nested, and as a key: wherever it is, the body is not text.
            ("POST", "/events/evt_x/replay", f'{{"x": [{{"{LONE}": 1}}]}}'),
        ]
        async with _client(server, token) as api:
            for method, path, body in bodies:
                answer = await api.request(
                    method,
                    path,
                    content=body.encode(),
                    headers={"Content-Type": "application/json"},
                )
                assert answer.status_code == 400, (method, path, answer.text)
                error = answer.json()["error"]
                assert error["code"] == "invalid_json", (path, error)
                assert "surrogate" in error["message"]
            # A surrogate pair is one character, and fine.
            paired = await api.post(
                "/workspaces/acme/webhooks",
                content=b'{"name": "ci", "channel": "local:ops", "prompt": "\\ud83d\\ude00"}',
                headers={"Content-Type": "application/json"},
            )
            assert paired.status_code == 201, paired.text
            assert paired.json()["prompt"] == "\N{GRINNING FACE}"
        assert await server.store.select(AdminToken)  # the service is still whole
