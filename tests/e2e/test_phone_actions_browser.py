"""The dashboard's actions that other browser tests submit only at a desktop width, on a phone.

One real agentws serves on loopback, its model a fake Messages API (down
at first, so one event fails) and a recording third-party MCP server
attached as connector ``third``. One Chromium tab at 390x844 signs in once
and submits each form by clicking it: a webhook's settings saved, its
failed events replayed through the confirmation page, a test event sent;
another webhook's URL and secret rotated and each previous one stopped;
a queued call approved on its own page; an endpoint token revoked; the
workspace, a group and a library renamed; a library and a connector
detached and attached on the Groups page; a document and a skill removed;
the connector refreshed, deactivated, activated and removed; an admin API
token revoked, an admin deleted; and the admin signed out. Every page an
action lands on is photographed (axe checks it), must fit the phone's
width and log no console error; the store (or the webhook's door) says
each action really happened.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from cryptography.fernet import Fernet
from playwright.sync_api import expect

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.domain.models import (
    Admin,
    AdminToken,
    Approval,
    ApprovalStatus,
    AuditEntry,
    Connector,
    ContextDocument,
    EventStatus,
    Group,
    GroupConnector,
    GroupLibrary,
    Library,
    McpToken,
    Skill,
    VerificationScheme,
    Webhook,
    Workspace,
)
from tests.e2e.browser_support import PHONE, open_browser, sign_in
from tests.e2e.browser_support import landed as landed_on
from tests.e2e.fake_anthropic import API_KEY, fake_anthropic
from tests.e2e.mcp_support import queued_call, running
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.e2e.run_support import MODEL, deliver, finished, hook
from tests.e2e.test_webhook_replays import Model, all_replays_finished
from tests.e2e.test_webhook_rotation_browser import NEW_SECRET, OLD_SECRET
from tests.e2e.webhook_support import deliver_github_push

PASSWORD = "correct horse battery staple"
#: The every-page test of test_dashboard_browser reports the missing /favicon.ico.
TOLERATES = ("/favicon.ico",)
SETTINGS = {
    "AGENTWS_SECRET_KEY": Fernet.generate_key().decode(),
    "AGENTWS_MODEL": MODEL,
    "ANTHROPIC_API_KEY": API_KEY,
    "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
    "AGENTWS_CONNECTOR_REFRESH_S": "0",
}


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
# Thorough tier only: a slow journey through pages whose actions test_actions_browser.py (the same
# actions at a desktop) and test_manage_browser.py::test_the_main_actions_on_a_phone check in
# every run.
@pytest.mark.thorough
async def test_each_desktop_only_action_on_a_phone(tmp_path: Path) -> None:
    model = Model()  # down: the first event fails
    state = ThirdParty([tool("send", "Send a page")])
    async with (
        fake_anthropic(model) as fake,
        running(tmp_path, ANTHROPIC_BASE_URL=fake.base_url, **SETTINGS) as server,
        third_party_server(state) as remote_url,
        open_browser("phone-actions") as browser,
    ):
        store = server.store
        await create_admin(store, "alice", password=PASSWORD, actor="t")
        await create_admin(store, "bob", password=PASSWORD, actor="t")
        await create_admin_token(store, "alice", "old-script", actor="t")
        ci = await hook(server, "ci")
        failed = await deliver(ci, {"build": 7})
        assert (await finished(store, failed)).status is EventStatus.FAILED
        model.down = False
        gh = await hook(server, "gh", verification=VerificationScheme.GITHUB, secret=OLD_SECRET)
        await attach_remote(store, remote_url, {})  # unlabeled: a write, approval first
        approval_id = await queued_call(server, "third_send", {"q": "page ops"})
        tab = await browser.new_tab(PHONE, tolerate=TOLERATES)
        page, base = tab.page, server.base_url
        problems: list[str] = []

        def landed(name: str) -> None:
            landed_on(browser, tab, name, problems)

        def status(text: str) -> None:
            expect(page.get_by_role("status")).to_have_text(text)

        def webhook() -> str:
            """Save a setting, replay the failed event (confirmed), send a test event."""
            sign_in(tab, base, "alice", PASSWORD)
            expect(page).to_have_url(f"{base}/dashboard/w/acme/overview")
            page.goto(f"{base}/dashboard/w/acme/webhooks/ci")
            page.get_by_role("textbox", name="Prompt", exact=True).fill("Say what broke.")
            page.get_by_role("button", name="Save").click()
            status("Saved.")
            landed("webhook-saved")
            page.locator("#replay-button").click()
            expect(page.get_by_role("heading", level=1)).to_have_text("Replay failed events of ci")
            expect(page.get_by_role("link", name=failed)).to_be_visible()
            landed("replay-confirmation")
            page.get_by_role("button", name="Replay 1 event").click()
            expect(page.get_by_role("status")).to_contain_text("Queued 1 replays of failed events")
            landed("replay-queued")
            page.get_by_label("Sample").select_option("plain")
            page.get_by_role("button", name="Send a test event").click()
            expect(page.get_by_role("status")).to_contain_text("Test event (plain) sent")
            landed("test-event")
            return page.url.rsplit("/", 1)[-1]

        def rotation() -> str:
            """A new URL and a new secret, each previous one stopped at once; the new URL."""
            page.goto(f"{base}/dashboard/w/acme/webhooks/gh")
            page.select_option("#url-grace", "24h")
            page.get_by_role("button", name="Issue a new URL").click()
            expect(page.get_by_role("heading", level=1)).to_contain_text("a new URL")
            shown = page.locator("#webhook-url").inner_text()
            landed("new-url")
            page.goto(f"{base}/dashboard/w/acme/webhooks/gh")
            page.get_by_role("button", name="Stop the previous URL now").click()
            status("The previous URL answers 404 now.")
            landed("url-grace-ended")
            page.fill("#new-secret", NEW_SECRET)
            page.select_option("#secret-grace", "1h")
            page.get_by_role("button", name="Use the new secret").click()
            expect(page.get_by_role("status")).to_contain_text("verifies with its new secret")
            landed("new-secret")
            page.get_by_role("button", name="Stop the previous secret now").click()
            status("The previous secret verifies nothing now.")
            landed("secret-grace-ended")
            return base + "/hooks/" + shown.split("/hooks/")[1]

        def approve_revoke_rename() -> None:
            """Approve a call on its page, revoke a token, rename what has a name."""
            page.goto(f"{base}/dashboard/approvals/{approval_id}")
            page.get_by_label("Reason (optional)").fill("from the phone")
            page.get_by_role("button", name="Approve and run").click()
            status("third_send: executed.")
            landed("approved")
            page.goto(f"{base}/dashboard/w/acme/endpoints")
            row = page.locator("#group-ops tbody tr").filter(has_text="tests")
            row.get_by_role("button", name="Revoke").click()  # the dialog is accepted
            status("Revoked token 'tests': its sessions are closing now.")
            landed("token-revoked")
            page.goto(f"{base}/dashboard/workspaces")
            page.get_by_label("New display name of acme").fill("Acme Corp")
            page.locator("#ws-acme").get_by_role("button", name="Rename").click()
            status("Workspace 'acme' is now called 'Acme Corp'.")
            landed("workspace-renamed")
            page.goto(f"{base}/dashboard/w/acme/groups")
            card = page.locator("#group-ops")
            card.get_by_label("Display name").fill("Operations")
            card.get_by_role("button", name="Rename").click()
            status("Group 'ops' is now called 'Operations'.")
            landed("group-renamed")
            page.goto(f"{base}/dashboard/w/acme/libraries")
            shelf = page.locator("#library-handbook")
            shelf.get_by_label("Display name").fill("Staff handbook")
            shelf.get_by_role("button", name="Rename").click()
            status("Library 'handbook' is now called 'Staff handbook'.")
            landed("library-renamed")

        def groups() -> None:
            """Move the library and the connector from ops to sales on the Groups page."""
            page.goto(f"{base}/dashboard/w/acme/groups")
            for kind, name in (("library", "handbook"), ("connector", "third")):
                sales = page.locator("#group-sales")
                sales.get_by_label(f"Attach a {kind}").select_option(name)
                sales.get_by_role("button", name=f"Attach {kind}").click()
                expect(page.get_by_role("status")).to_contain_text(
                    f"Attached {kind} '{name}' to 'sales'"
                )
                landed(f"{kind}-attached")
                ops = page.locator("#group-ops")
                ops.get_by_role("button", name=f"Detach {kind} {name} from ops").click()
                status(f"Detached {kind} '{name}' from 'ops'.")
                landed(f"{kind}-detached")

        def library() -> None:
            """Remove a document and a skill from the library's table."""
            page.goto(f"{base}/dashboard/w/acme/libraries")
            shelf = page.locator("#library-handbook")
            shelf.get_by_role("button", name="Remove refunds").click()
            status("Removed 'Refund policy' from handbook.")
            landed("document-removed")
            page.locator("#library-handbook").get_by_role(
                "button", name="Remove the skill triage"
            ).click()
            status("Removed skill 'triage' from handbook.")
            landed("skill-removed")

        def connector() -> None:
            """Refresh, deactivate, activate, then remove the connector."""
            page.goto(f"{base}/dashboard/w/acme/connectors/third")
            page.get_by_role("button", name="Refresh its tools").click()
            expect(page.get_by_role("status")).to_contain_text("Tools of 'third'")
            landed("connector-refreshed")
            page.get_by_role("button", name="Deactivate").click()
            status("Connector 'third' is inactive: no group lists its tools.")
            landed("connector-deactivated")
            page.get_by_role("button", name="Activate").click()
            status("Connector 'third' is active.")
            page.get_by_role("button", name="Remove").click()  # the dialog is accepted
            status("Removed connector 'third', its tools and attachments.")
            landed("connector-removed")

        def admins() -> None:
            """Revoke an admin API token, delete an admin, sign out."""
            page.goto(f"{base}/dashboard/admins")
            page.get_by_role("button", name="Revoke old-script").click()
            status("Revoked admin API token old-script: it is refused from now on.")
            landed("admin-token-revoked")
            page.get_by_role("button", name="Delete admin bob").click()
            status("Deleted admin bob, its sessions and admin API tokens.")
            landed("admin-deleted")
            page.get_by_role("button", name="Sign out").click()
            expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
            landed("signed-out")
            page.goto(f"{base}/dashboard/admins")
            expect(page).to_have_url(f"{base}/dashboard/login?next=/dashboard/admins")

        test_event = await browser.run(webhook)
        new_url = await browser.run(rotation)
        await browser.run(approve_revoke_rename)
        await browser.run(groups)
        await browser.run(library)
        await browser.run(connector)
        await browser.run(admins)

        # What the store (and the webhooks' door) says happened.
        assert (await store.get(Webhook, ci.id)).prompt == "Say what broke."
        (replay,) = await all_replays_finished(server, ci.id, 1)
        assert replay.replay_of == failed and replay.status is EventStatus.DONE
        sent = await finished(store, test_event)
        assert sent.webhook_id == ci.id and sent.status is EventStatus.DONE
        async with httpx2.AsyncClient(timeout=10) as http:
            assert (await http.post(gh.url, json={})).status_code == 404
        assert await deliver_github_push(new_url, OLD_SECRET, "old-secret") == 401
        assert await deliver_github_push(new_url, NEW_SECRET, "new-secret") == 202
        approved = await store.get(Approval, approval_id)
        assert approved.status is ApprovalStatus.EXECUTED
        assert (approved.decided_by, approved.reason) == ("admin:alice", "from the phone")
        assert state.arguments == [{"q": "page ops"}]
        revoked = await store.find(McpToken, name="tests")
        assert revoked is not None and revoked.revoked_at is not None
        workspace = await store.find(Workspace, slug="acme")
        assert workspace is not None and workspace.name == "Acme Corp"
        ops = await store.find(Group, workspace_id=workspace.id, slug="ops")
        sales = await store.find(Group, workspace_id=workspace.id, slug="sales")
        assert ops is not None and ops.name == "Operations" and sales is not None
        handbook = await store.find(Library, slug="handbook")
        assert handbook is not None and handbook.name == "Staff handbook"
        assert [link.group_id for link in await store.select(GroupLibrary)] == [sales.id]
        assert await store.select(GroupConnector) == []  # removed with its connector
        moved = [
            (e.action, e.target)
            for e in await store.select(AuditEntry, actor="admin:alice")
            if e.action.startswith("connector.")
        ]
        assert moved[:2] == [
            ("connector.attach", "acme/sales/third"),
            ("connector.detach", "acme/ops/third"),
        ], moved
        assert await store.find(ContextDocument, library_id=handbook.id, slug="refunds") is None
        assert await store.find(ContextDocument, library_id=handbook.id) is not None
        assert await store.select(Skill) == []
        assert await store.find(Connector, name="third") is None
        (token,) = await store.select(AdminToken)
        assert token.revoked_at is not None
        assert [a.username for a in await store.select(Admin)] == ["alice"]
    assert not problems, "\n".join(problems)
