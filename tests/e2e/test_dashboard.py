"""The dashboard over HTTP: sign-in, cookies, CSRF, throttling, and every page.

A real agentws serves on loopback; httpx2 plays the browser (cookies kept,
forms posted as a browser posts them). The browser tests in
``test_dashboard_browser.py`` walk the same journeys in Chromium.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import httpx2
import pytest
import trio
from cryptography.fernet import Fernet

from agentws.admins.accounts import create_admin
from agentws.domain.models import (
    AdminSession,
    Approval,
    AuditEntry,
    ChatMessage,
    Event,
    EventStatus,
    Webhook,
)
from tests.e2e.loop_steps import watch_steps
from tests.e2e.mcp_support import Running, running, sdk_session
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.e2e.run_support import deliver, finished, hook
from tests.e2e.webhook_support import Hook
from tests.support import clean_env

PASSWORD = "correct horse battery staple"
LOOPBACK = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}


def _hidden(html: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert match, f"no hidden field {name!r} in the page"
    return match.group(1)


async def _signed_in(server: Running, http: httpx2.AsyncClient) -> str:
    """Sign ``alice`` in; the session's CSRF token (from the page's forms)."""
    await create_admin(server.store, "alice", password=PASSWORD, actor="t")
    form = await http.get("/dashboard/login")
    response = await http.post(
        "/dashboard/login",
        data={
            "login_token": _hidden(form.text, "login_token"),
            "username": "alice",
            "password": PASSWORD,
            "next": "",
        },
    )
    assert response.status_code == 302, response.text
    home = await http.get("/dashboard/w/acme/webhooks")
    assert home.status_code == 200
    return _hidden(home.text, "csrf")


def _browser(server: Running) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(base_url=server.base_url, timeout=10)


async def test_sign_in_sets_a_guarded_cookie_and_sign_out_ends_the_session(tmp_path: Path) -> None:
    async with running(tmp_path) as server, _browser(server) as http:
        before = await http.get("/dashboard/w/acme/webhooks")
        assert before.status_code == 302
        assert before.headers["location"].startswith("/dashboard/login?next=")
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        form = await http.get("/dashboard/login")
        assert form.headers["content-security-policy"].startswith("default-src 'self'")
        assert form.headers["x-frame-options"] == "DENY"
        signed = await http.post(
            "/dashboard/login",
            data={
                "login_token": _hidden(form.text, "login_token"),
                "username": "alice",
                "password": PASSWORD,
                "next": "/dashboard/w/acme/events",
            },
        )
        assert signed.status_code == 302
        assert signed.headers["location"] == "/dashboard/w/acme/events"
        cookie = next(
            c for c in signed.headers.get_list("set-cookie") if c.startswith("agentws_session=")
        )
        flags = {part.strip().lower() for part in cookie.split(";")}
        assert {"httponly", "samesite=lax", "path=/"} <= flags
        assert "secure" not in flags  # plain http on loopback; behind TLS it is set
        (session,) = await server.store.select(AdminSession)
        secret = cookie.split(";")[0].split("=", 1)[1]
        assert secret not in repr(session) and session.token_hash != secret  # only its hash

        page = await http.get("/dashboard/w/acme/webhooks")
        assert page.status_code == 200 and "alice" in page.text
        out = await http.post("/dashboard/logout", data={"csrf": _hidden(page.text, "csrf")})
        assert out.status_code == 302
        assert await server.store.select(AdminSession) == []
        assert (await http.get("/dashboard/w/acme/webhooks")).status_code == 302
        actions = [e.action for e in await server.store.select(AuditEntry, actor="admin:alice")]
        assert actions == ["admin.sign_in", "admin.sign_out"]


async def test_a_sign_in_whose_next_is_unsafe_goes_to_the_dashboard_home(
    tmp_path: Path,
) -> None:
    # A line break in `next` once reached the Location header: a 500, no session.
    unsafe = (
        "/dashboard/w/acme/events\r\nSet-Cookie: x=1",
        "/dashboard/\nx",
        "/dashboard/w/acme\tevents",
        "//evil.example/dashboard",
        "/dashboard\\..\\evil",
        "https://evil.example/dashboard",
        "/dashboardx",
    )
    async with running(tmp_path) as server, _browser(server) as http:
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        for target in unsafe:
            form = await http.get("/dashboard/login", params={"next": target})
            assert form.status_code == 200
            signed = await http.post(
                "/dashboard/login",
                data={
                    "login_token": _hidden(form.text, "login_token"),
                    "username": "alice",
                    "password": PASSWORD,
                    "next": target,
                },
            )
            assert signed.status_code == 302, (target, signed.text)
            assert signed.headers["location"] == "/dashboard/", target
            assert "x=1" not in str(signed.headers.get_list("set-cookie"))
        assert len(await server.store.select(AdminSession)) == len(unsafe)


async def test_the_session_cookie_is_secure_behind_tls(tmp_path: Path) -> None:
    async with running(tmp_path) as server, _browser(server) as http:
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        form = await http.get("/dashboard/login", headers={"X-Forwarded-Proto": "https"})
        # The form's own cookie is Secure too: a client over TLS sends it back.
        (login_cookie,) = form.headers.get_list("set-cookie")
        assert "secure" in login_cookie.lower()
        signed = await http.post(
            "/dashboard/login",
            headers={"X-Forwarded-Proto": "https", "Cookie": login_cookie.split(";")[0]},
            data={
                "login_token": _hidden(form.text, "login_token"),
                "username": "alice",
                "password": PASSWORD,
            },
        )
        cookie = next(
            c for c in signed.headers.get_list("set-cookie") if c.startswith("agentws_session=")
        )
        assert "secure" in {part.strip().lower() for part in cookie.split(";")}


async def test_a_form_without_its_csrf_token_is_refused_and_changes_nothing(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as server, _browser(server) as http:
        csrf = await _signed_in(server, http)
        fields = {"name": "ci", "channel": "local:ops", "prompt": "Summarise."}
        for data in (fields, {**fields, "csrf": "forged"}):
            refused = await http.post("/dashboard/w/acme/webhooks", data=data)
            assert refused.status_code == 403
            assert "security token" in refused.text
        assert await server.store.select(Webhook) == []
        # A sign-in form posted without its own token is refused too.
        login = await http.post("/dashboard/login", data={"username": "alice", "password": "x"})
        assert login.status_code == 403
        created = await http.post("/dashboard/w/acme/webhooks", data={**fields, "csrf": csrf})
        assert created.status_code == 200
        assert len(await server.store.select(Webhook)) == 1


async def test_failed_sign_ins_are_throttled(tmp_path: Path) -> None:
    async with running(tmp_path) as server, _browser(server) as http:
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")

        async def attempt(password: str) -> httpx2.Response:
            form = await http.get("/dashboard/login")
            return await http.post(
                "/dashboard/login",
                data={
                    "login_token": _hidden(form.text, "login_token"),
                    "username": "alice",
                    "password": password,
                },
            )

        # As docs/admin.md says: refused after 5 failed attempts.
        statuses = [(await attempt("wrong")).status_code for _ in range(5)]
        assert statuses == [401] * 5
        locked = await attempt(PASSWORD)  # even the right password waits now
        assert locked.status_code == 429
        assert int(locked.headers["retry-after"]) >= 1
        assert "Too many failed sign-ins" in locked.text
        assert await server.store.select(AdminSession) == []
        failures = await server.store.select(AuditEntry, action="admin.sign_in_failed")
        assert len(failures) == 5


async def test_a_webhook_made_in_the_dashboard_shows_its_url_once_and_its_events(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as server, _browser(server) as http:
        csrf = await _signed_in(server, http)
        created = await http.post(
            "/dashboard/w/acme/webhooks",
            data={
                "csrf": csrf,
                "name": "ci",
                "channel": "local:ops",
                "prompt": "Summarise the build.",
                "group": "",
                "state": "active",
                "verification": "none",
                "rate_per_min": "600",
                "concurrency": "4",
            },
        )
        assert created.status_code == 200
        url = re.search(r'<code id="webhook-url">([^<]+)</code>', created.text)
        assert url and "/hooks/agwh_" in url.group(1)
        token_path = "/hooks/" + url.group(1).split("/hooks/")[1]
        (webhook,) = await server.store.select(Webhook)
        listing = await http.get("/dashboard/w/acme/webhooks")
        assert "ci" in listing.text and token_path not in listing.text  # never shown again

        event_id = await deliver(Hook(webhook, server.base_url + token_path), {"build": 7})
        assert (await finished(server.store, event_id)).status is EventStatus.DONE
        events = await http.get("/dashboard/w/acme/events", params={"webhook": "ci"})
        assert event_id in events.text
        timeline = await http.get(f"/dashboard/events/{event_id}")
        assert timeline.status_code == 200
        assert '"build": 7' in html.unescape(timeline.text) and 'id="message"' in timeline.text
        channel = await http.get("/dashboard/w/acme/channels", params={"channel": "local:ops"})
        assert "build" in channel.text.lower()

        bad = await http.post(
            "/dashboard/w/acme/webhooks",
            data={"csrf": csrf, "name": "x", "channel": "slack:general", "prompt": "p"},
        )
        assert bad.status_code == 400  # the form again, with the reason
        assert "use the channel's id" in html.unescape(bad.text)

        off = await http.post(
            f"/dashboard/w/acme/webhooks/{webhook.id}/deactivate", data={"csrf": csrf}
        )
        assert off.status_code == 302
        assert not (await server.store.get(Webhook, webhook.id)).active


async def test_a_large_event_body_is_shown_cut_with_a_link_to_the_whole_body(
    tmp_path: Path,
) -> None:
    """The page's work is bounded by what it shows: 10 MiB took a 2.2 s step and made 45 MB."""
    async with running(tmp_path) as server, _browser(server) as http:
        await _signed_in(server, http)
        issued = await hook(server)
        # A body stored whole when webhooks took up to 10 MiB: the worst shape to indent.
        body = json.dumps({f"k{n:07d}": n for n in range(700_000)}).encode()
        assert len(body) > 10_000_000
        event = await server.store.insert(
            Event(webhook_id=issued.webhook.id, status=EventStatus.DONE, body=body)
        )
        with watch_steps() as steps:
            page = await http.get(f"/dashboard/events/{event.id}")
        steps.assert_none_long()
        assert page.status_code == 200
        assert len(page.content) < 512 * 1024
        shown = html.unescape(page.text)
        assert '{\n  "k0000000": 0,\n  "k0000001": 1,' in shown
        assert "k0699999" not in shown and "\n  …\n}" in shown
        assert "this is its first 128.0 KiB, indented" in shown
        link = f"/dashboard/events/{event.id}/body"
        assert f'href="{link}"' in page.text
        # The whole body, as received, to the signed-in admin only.
        whole = await http.get(link)
        assert whole.status_code == 200
        assert whole.content == body
        assert whole.headers["content-type"] == "application/json"
        disposition = f'attachment; filename="{event.id}.json"'
        assert whole.headers["content-disposition"] == disposition
        assert whole.headers["x-content-type-options"] == "nosniff"
        async with _browser(server) as stranger:
            refused = await stranger.get(link)
        assert refused.status_code == 302 and "/dashboard/login" in refused.headers["location"]
        # A small body is shown whole, with the same link.
        small = await server.store.insert(
            Event(webhook_id=issued.webhook.id, status=EventStatus.DONE, body=b'{"a": [1, {}]}')
        )
        page = await http.get(f"/dashboard/events/{small.id}")
        assert '{\n  "a": [\n    1,\n    {}\n  ]\n}' in html.unescape(page.text)
        assert "this is its first" not in page.text
        assert f'href="/dashboard/events/{small.id}/body"' in page.text


async def test_long_messages_are_drawn_from_their_start_and_shown_whole_as_text(
    tmp_path: Path,
) -> None:
    """Drawing Markdown is pure Python: 100 messages of 10,000 "[" took a 7 s step."""
    async with running(tmp_path) as server, _browser(server) as http:
        await _signed_in(server, http)
        issued = await hook(server)
        workspace_id = issued.webhook.workspace_id
        channel = issued.webhook.channel
        for n in range(20):  # each its own, so that none was drawn before
            text = f"**bold {n:02}** [" + "[" * 10_000 + " the end"
            message = ChatMessage(workspace_id=workspace_id, channel=channel, text=text)
            await server.store.insert(message)
        with watch_steps() as steps:
            page = await http.get("/dashboard/w/acme/channels", params={"channel": channel})
        steps.assert_none_long()
        assert page.status_code == 200
        shown = page.text
        assert shown.count("<strong>bold ") == 20
        # Drawn up to 8 KiB (ending in an ellipsis); the whole text below, as text.
        assert shown.count("[" * 8000) == 40 and shown.count("<p>…</p>") == 20
        summary = f"<summary>The whole message, as text ({len(text):,} characters)</summary>"
        assert shown.count(summary) == 20
        assert shown.count(" the end</pre>") == 20


async def test_the_create_webhook_form_keeps_what_was_typed_after_a_refusal(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as server, _browser(server) as http:
        csrf = await _signed_in(server, http)
        typed = {
            "csrf": csrf,
            "name": "deploys",
            "channel": "slack:general",  # a name, not an id: refused
            "prompt": "Say which deploys\nwent out & why.",
            "group": "ops",
            "state": "draft",
            "verification": "shared_secret",
            "secret": "typed-secret-value",
            "rate_per_min": "30",
            "concurrency": "2",
        }
        refused = await http.post("/dashboard/w/acme/webhooks", data=typed)
        assert refused.status_code == 400
        page = refused.text
        assert "use the channel's id" in html.unescape(page)
        assert 'id="name" name="name" required placeholder="ci" value="deploys"' in page
        assert 'value="slack:general"' in page
        assert ">Say which deploys\nwent out &amp; why.</textarea>" in page
        assert '<option value="ops" selected>' in page
        assert '<option value="draft" selected>' in page
        assert '<option value="shared_secret" selected>' in page
        assert 'value="30"' in page and 'value="2"' in page
        assert "typed-secret-value" not in page  # a secret is typed again, never echoed
        assert await server.store.select(Webhook) == []
        # The values are the form's only: a fresh listing is empty again.
        fresh = await http.get("/dashboard/w/acme/webhooks")
        assert "deploys" not in fresh.text


async def test_try_it_for_a_shared_secret_webhook_sends_the_secret_header(
    tmp_path: Path,
) -> None:
    key = {"AGENTWS_SECRET_KEY": Fernet.generate_key().decode()}
    async with running(tmp_path, **key) as server, _browser(server) as http:
        csrf = await _signed_in(server, http)
        created = await http.post(
            "/dashboard/w/acme/webhooks",
            data={
                "csrf": csrf,
                "name": "ci",
                "channel": "local:ops",
                "prompt": "Summarise.",
                "verification": "shared_secret",
                "secret": "s3cret-not-shown",
            },
        )
        assert created.status_code == 200, created.text
        page = html.unescape(created.text)
        curl = re.search(r"<pre[^>]*>(curl .*?)</pre>", page, re.DOTALL)
        assert curl, page
        assert """-H "X-Webhook-Secret: $WEBHOOK_SECRET\"""" in curl.group(1)
        assert "s3cret-not-shown" not in page
        # The command, run as shown with the secret in WEBHOOK_SECRET, is accepted
        # (at the port this test's server took: the settings do not know it).
        command = re.sub(r"'http://[^/']+/hooks/", f"'{server.base_url}/hooks/", curl.group(1))
        done = await trio.run_process(
            ["sh", "-c", command + " --silent --show-error"],
            env=clean_env(WEBHOOK_SECRET="s3cret-not-shown", NO_PROXY="*", no_proxy="*"),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["status"] == "queued", done.stdout
        assert len(await server.store.select(Event)) == 1
        # A webhook without verification: the plain command, no secret header.
        plain = await http.post(
            "/dashboard/w/acme/webhooks",
            data={"csrf": csrf, "name": "open", "channel": "local:ops", "prompt": "p"},
        )
        assert "X-Webhook-Secret" not in plain.text


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_tokens_permissions_and_an_approval_in_the_dashboard(tmp_path: Path) -> None:
    state = ThirdParty([tool("send", "Send a page")])
    async with (
        running(tmp_path, **LOOPBACK) as server,
        third_party_server(state) as url,
        _browser(server) as http,
    ):
        await attach_remote(server.store, url, {})
        csrf = await _signed_in(server, http)

        endpoints = await http.get("/dashboard/w/acme/endpoints")
        assert "/mcp/g/acme/ops" in endpoints.text and "mcp-remote" in endpoints.text
        made = await http.post(
            "/dashboard/w/acme/endpoints/ops/tokens",
            data={"csrf": csrf, "name": "cursor-ada", "scope": "write"},
        )
        secret = re.search(r'<code id="token-secret">(agws_[^<]+)</code>', made.text)
        assert secret
        assert secret.group(1) not in (await http.get("/dashboard/w/acme/endpoints")).text

        permissions = await http.get("/dashboard/w/acme/permissions", params={"group": "ops"})
        assert "third_send" in permissions.text
        set_read = await http.post(
            "/dashboard/w/acme/permissions",
            data={"csrf": csrf, "tool": "third_send", "group": "ops", "label": "write"},
        )
        assert set_read.status_code == 302

        async with sdk_session(server, "streamable", token=secret.group(1)) as session:
            queued = await session.call_tool("third_send", {"q": "page"})
        approval_id = (queued.structured_content or {})["approval_id"]
        queue = await http.get("/dashboard/approvals")
        assert approval_id in queue.text and "third_send" in queue.text
        page = await http.get(f"/dashboard/approvals/{approval_id}")
        assert "Approve and run" in page.text
        approved = await http.post(
            f"/dashboard/approvals/{approval_id}/approve", data={"csrf": csrf, "reason": "ok"}
        )
        assert approved.status_code == 302
        after = await http.get(approved.headers["location"])
        assert "third-party found: page" in after.text
        assert (await server.store.get(Approval, approval_id)).decided_by == "admin:alice"
        assert state.calls == ["send"]

        libraries = await http.get("/dashboard/w/acme/libraries")
        assert libraries.status_code == 200 and "handbook" in libraries.text.lower()
        uploaded = await http.post(
            "/dashboard/w/acme/libraries/handbook/documents",
            data={"csrf": csrf, "title": "Runbook", "policy": "spine"},
            files={"file": ("runbook.md", b"# Runbook\nRestart the thing.", "text/markdown")},
        )
        assert uploaded.status_code == 302
        assert "Runbook" in (await http.get("/dashboard/w/acme/libraries")).text

        revoke = re.search(
            r'action="(/dashboard/w/acme/endpoints/ops/tokens/tok_[^/]+/revoke)"',
            (await http.get("/dashboard/w/acme/endpoints")).text,
        )
        assert revoke
        revoked = await http.post(revoke.group(1), data={"csrf": csrf})
        assert revoked.status_code == 302


async def test_the_api_takes_the_session_with_its_csrf_header(tmp_path: Path) -> None:
    async with running(tmp_path) as server, _browser(server) as http:
        csrf = await _signed_in(server, http)
        listed = await http.get("/api/v1/workspaces")
        assert listed.status_code == 200
        body = {"name": "ci", "channel": "ops", "prompt": "p"}
        refused = await http.post("/api/v1/workspaces/acme/webhooks", json=body)
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "permission_denied"
        assert await server.store.select(Webhook) == []
        created = await http.post(
            "/api/v1/workspaces/acme/webhooks", json=body, headers={"X-CSRF-Token": csrf}
        )
        assert created.status_code == 201


async def test_unknown_things_are_404_pages_and_the_workspace_switch_works_without_script(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as server, _browser(server) as http:
        await _signed_in(server, http)
        for path in ("/dashboard/w/nope/webhooks", "/dashboard/events/evt_nope"):
            missing = await http.get(path)
            assert missing.status_code == 404
            assert "Not found" in missing.text
        missing = await http.get("/dashboard/approvals/apr_nope")
        assert missing.status_code == 404
        # A path the dashboard does not have: its 404 page, not the API's JSON.
        for path in ("/dashboard/nope", "/dashboard/w/acme/nope/deeper", "/dashboard/static/x"):
            unknown = await http.get(path)
            assert unknown.status_code == 404, path
            assert unknown.headers["content-type"].startswith("text/html"), path
            assert "<h1>Not found</h1>" in unknown.text
            assert 'class="brand"' in unknown.text  # the dashboard's layout
            assert unknown.headers["content-security-policy"].startswith("default-src")
        wrong_method = await http.get("/dashboard/logout")
        assert wrong_method.status_code == 405
        assert wrong_method.headers["content-type"].startswith("text/html")
        # Signed out, the same page (it names nothing).
        async with _browser(server) as anonymous:
            unknown = await anonymous.get("/dashboard/nope")
            assert unknown.status_code == 404 and "<h1>Not found</h1>" in unknown.text
        # Elsewhere the JSON errors stay.
        assert (await http.get("/api/v1/nope")).json()["error"]["code"] == "not_found"
        assert (await http.get("/nope")).headers["content-type"] == "application/json"
        switched = await http.get("/dashboard/", params={"workspace": "acme"})
        assert switched.headers["location"] == "/dashboard/w/acme/overview"


async def test_a_webhook_is_changed_in_the_dashboard(tmp_path: Path) -> None:
    from agentws.connectors.admin import add_connector, attach_connector
    from agentws.domain.allowlist import Allowlist
    from agentws.domain.models import ConnectorKind
    from tests.e2e.run_support import hook

    async with running(tmp_path) as server, _browser(server) as http:
        await add_connector(
            server.store,
            "acme",
            "github",
            kind=ConnectorKind.GITHUB,
            url=None,
            headers={},
            secret=None,
            box=None,
            # Named: saved without asking DNS for api.github.com (no test may).
            allowlist=Allowlist.parse("api.github.com"),
            actor="t",
        )
        await attach_connector(server.store, "acme", "ops", "github", actor="t")
        issued = await hook(server, group="ops")
        csrf = await _signed_in(server, http)
        edit = f"/dashboard/w/acme/webhooks/{issued.id}/edit"
        fields = {"csrf": csrf, "channel": "local:deploys", "prompt": "Only failures."}
        saved = await http.post(edit, data={**fields, "allowed_tools": "github_create_issue"})
        assert saved.status_code == 302
        assert "Saved." in (await http.get(saved.headers["location"])).text
        changed = await server.store.get(Webhook, issued.id)
        assert (changed.channel, changed.prompt) == ("local:deploys", "Only failures.")
        assert set(changed.allowed_tools) == {"github_create_issue"}

        refused = await http.post(edit, data={**fields, "allowed_tools": "github_delete_branch"})
        page = await http.get(refused.headers["location"])
        assert "can never be pre-authorized" in page.text
        assert set((await server.store.get(Webhook, issued.id)).allowed_tools) == {
            "github_create_issue"
        }
        cleared = await http.post(edit, data={**fields, "allowed_tools": ""})
        assert cleared.status_code == 302
        assert (await server.store.get(Webhook, issued.id)).allowed_tools == {}


async def test_a_channel_whose_url_is_not_public_is_refused_on_create_and_edit(
    tmp_path: Path,
) -> None:
    from agentws.settings.secret_box import ensure_key_file
    from tests.e2e.test_admin_api import _private_hook_connector

    ensure_key_file(tmp_path)
    async with (
        running(tmp_path, AGENTWS_DATA_DIR=str(tmp_path)) as server,
        _browser(server) as http,
    ):
        await _private_hook_connector(server)
        csrf = await _signed_in(server, http)
        fields = {"csrf": csrf, "name": "ci", "channel": "webhook:alerts", "prompt": "p"}
        refused = await http.post("/dashboard/w/acme/webhooks", data=fields)
        assert refused.status_code == 400  # the form comes back, filled in
        page = html.unescape(refused.text)
        assert "connector 'alerts' at http://10.0.0.5:8080 may not be used" in page
        assert "AGENTWS_CONNECTOR_ALLOWLIST" in page
        assert await server.store.select(Webhook) == []

        created = await http.post("/dashboard/w/acme/webhooks", data={**fields, "channel": "ops"})
        assert created.status_code == 200, created.text
        (webhook,) = await server.store.select(Webhook)
        edit = f"/dashboard/w/acme/webhooks/{webhook.id}/edit"
        moved = await http.post(edit, data={**fields, "allowed_tools": ""})
        page = html.unescape((await http.get(moved.headers["location"])).text)
        assert "may not be used" in page
        assert (await server.store.get(Webhook, webhook.id)).channel == "local:ops"


#: Characters that draw nothing or reorder what follows (a "txt.exe" shown as
#: "exe.txt"), and terminal controls: each must show as a visible escape.
HIDDEN = {
    "\u202e": "\\u202e",  # RIGHT-TO-LEFT OVERRIDE
    "\u2066": "\\u2066",  # LEFT-TO-RIGHT ISOLATE
    "\u200b": "\\u200b",  # ZERO WIDTH SPACE
    "\u2028": "\\u2028",  # LINE SEPARATOR
    "\ufeff": "\\ufeff",  # BYTE ORDER MARK
    "\x1b": "\\u001b",  # ESC, as in a terminal colour code
    "\x85": "\\u0085",  # NEXT LINE (C1)
    "\U000e0041": "\\U000e0041",  # TAG LATIN CAPITAL LETTER A: invisible text
}


def _shows_escaped(page: str, where: str) -> None:
    """No hidden character raw in ``page``, but in what its forms send back as stored."""
    shown_text = re.sub(r'value="[^"]*"|<textarea[^>]*>[^<]*</textarea>', "", page)
    for char, escape in HIDDEN.items():
        assert char not in shown_text, f"{where}: raw {escape} in the page"


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_invisible_and_bidi_characters_show_escaped_on_every_page(tmp_path: Path) -> None:
    hidden = "".join(HIDDEN)
    state = ThirdParty([tool("send", f"Send{hidden}"), tool("gnp\u202eexe.txt", "Named to fool")])
    async with (
        running(tmp_path, **LOOPBACK) as server,
        third_party_server(state) as url,
        _browser(server) as http,
    ):
        await attach_remote(server.store, url, {})
        csrf = await _signed_in(server, http)
        # A remote's call arguments, an event's body and headers, a webhook's name and
        # prompt: text from outside, each holding every hidden character.
        async with sdk_session(server, "streamable") as session:
            queued = await session.call_tool("third_send", {"q": f"invoice{hidden}fdp.exe"})
        approval_id = (queued.structured_content or {})["approval_id"]
        issued = await hook(server, f"ci{hidden}", prompt=f"Summarise{hidden}.")
        async with httpx2.AsyncClient(timeout=10) as sender:
            sent = await sender.post(
                issued.url,
                json={f"key{hidden}": f"value{hidden}"},
                headers={"User-Agent": b"agent\x9b31mevil"},  # a C1 terminal control
            )
        event_id = sent.json()["event_id"]
        await finished(server.store, event_id)
        webhook = issued.webhook.id
        pages = {
            "overview": "/dashboard/w/acme/overview",
            "approvals": "/dashboard/approvals",
            "approval": f"/dashboard/approvals/{approval_id}",
            "webhooks": "/dashboard/w/acme/webhooks",
            "webhook": f"/dashboard/w/acme/webhooks/{webhook}",
            "events": "/dashboard/w/acme/events",
            "event": f"/dashboard/events/{event_id}",
            "permissions": "/dashboard/w/acme/permissions?group=ops",
            "channels": "/dashboard/w/acme/channels",
        }
        for name, path in pages.items():
            page = await http.get(path)
            assert page.status_code == 200, (name, page.text)
            _shows_escaped(page.text, name)
        approval = (await http.get(pages["approval"])).text
        assert "invoice\\u202e\\u2066\\u200b" in approval
        assert "\\U000e0041fdp.exe" in approval
        tools = (await http.get(pages["permissions"])).text
        assert "<code>third_gnp\\u202eexe.txt</code>" in tools, tools
        # Its form names it as it is: labelling it works.
        field = re.search(r'name="tool" value="(third_gnp[^"]*)"', tools)
        assert field and html.unescape(field.group(1)) == "third_gnp\u202eexe.txt"
        labeled = await http.post(
            "/dashboard/w/acme/permissions",
            data={"csrf": csrf, "tool": field.group(1), "group": "ops", "label": "read"},
        )
        told = (await http.get(labeled.headers["location"])).text
        assert "notice error" not in told and "\\u202eexe.txt is labeled read" in told
        event = html.unescape((await http.get(pages["event"])).text)
        assert '"key\\u202e' in event and "agent\\u009b31mevil" in event
        listing = (await http.get(pages["webhooks"])).text
        assert "ci\\u202e\\u2066" in listing
        # A notice quoting a name is escaped as well.
        off = await http.post(
            f"/dashboard/w/acme/webhooks/{webhook}/deactivate", data={"csrf": csrf}
        )
        notice = await http.get(off.headers["location"])
        _shows_escaped(notice.text, "the notice")
        assert "Webhook &#39;ci\\u202e" in notice.text

        # What a form sends back is the stored value itself, not its escaped view:
        # saving the webhook unchanged keeps its prompt.
        edit = (await http.get(pages["webhook"])).text
        assert 'id="prompt-hidden"' in edit  # and the page says so
        prompt = re.search(r'<textarea id="prompt" name="prompt"[^>]*>(.*?)</textarea>', edit, re.S)
        assert prompt and html.unescape(prompt.group(1)) == f"Summarise{hidden}."
        saved = await http.post(
            f"/dashboard/w/acme/webhooks/{webhook}/edit",
            data={"csrf": csrf, "channel": "local:ops", "prompt": html.unescape(prompt.group(1))},
        )
        assert saved.status_code == 302
        assert (await server.store.get(Webhook, webhook)).prompt == f"Summarise{hidden}."
