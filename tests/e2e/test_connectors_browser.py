"""The Connectors pages in headless Chromium, at a desktop and a phone width.

A real agentws serves on loopback (its outbound guard allows 127.0.0.1),
with a third-party MCP server and a fake Slack beside it. In the dashboard
the admin adds a remote MCP connector (its 40 tools are fetched at once),
accepts the suggested labels in bulk (the destructive suggestion stays
unaccepted until ticked by hand), sets one tool's label with its select,
attaches it to a group, whose MCP endpoint then lists and runs its tools,
sees the calls in the connector's health (one failed: its error rate and
last error), tests and refreshes it, deactivates and activates it,
detaches it; adds a remote whose address is down (its failed refresh
warns, its health shows the error); adds GitHub, Slack, Stripe and an
incoming webhook connectors with their secrets, which no later page
holds; tests them and removes one. On a phone it adds a remote MCP
connector with a secret, accepts labels, sets one, attaches, detaches and
tests it. Every page is checked for console errors, photographed into
``test-artifacts/screenshots/`` (axe checks each page photographed), and
must fit a phone's width.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from playwright.sync_api import Locator, expect

from agentws.admins.accounts import create_admin
from agentws.domain.models import AuditEntry, CachedTool, Capability, Connector
from tests.e2e.browser_support import Browser, Tab, fits, open_browser, sign_in
from tests.e2e.fake_slack import BOT_TOKEN, fake_slack
from tests.e2e.mcp_support import Running, running, sdk_session
from tests.e2e.polling import wait_until
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, ThirdParty, third_party_server, tool

PASSWORD = "correct horse battery staple"
ENV = {
    "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
    "AGENTWS_CONNECTOR_REFRESH_S": "0",
    "AGENTWS_SECRET_KEY": Fernet.generate_key().decode(),
}
TOLERATES = ("/favicon.ico",)
HOOK_PATH = "T0042/B0042/incominghooksecret"
GITHUB_TOKEN = "ghp_never0shown0in0any0page0000000000"
STRIPE_KEY = "sk_test_never0shown0in0any0page00000"
REMOTE_SECRET = "remote-secret-never-shown-9f2c41"
SECRETS = (BOT_TOKEN, HOOK_PATH, GITHUB_TOKEN, STRIPE_KEY, REMOTE_SECRET)
#: 37 read tools besides the three the test looks at: a page of 40 tools stays a table.
FILLER = [
    tool(f"list_things_{n:02d}", f"List things, page {n}.", read_only_hint=True) for n in range(37)
]
TOOLS = [
    tool("search", "Search the tracker.", read_only_hint=True),
    tool("create_issue", "Open an issue."),
    tool("delete_repo", "Delete a repository.", destructive_hint=True),
    *FILLER,
]


def _nav(tab: Tab, section: str) -> None:
    tab.page.get_by_role("navigation", name="Sections").get_by_role("link", name=section).click()


def _checked(tab: Tab, where: str, name: str, browser: Browser) -> None:
    """The page is clean, photographed, and accessible (the screenshot runs axe)."""
    tab.assert_clean(where)
    browser.screenshot(tab, name)


def _status(tab: Tab) -> Locator:
    return tab.page.get_by_role("status")


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
# Thorough tier only: a slow journey through pages whose actions test_connectors_dashboard.py and
# tests/cli/test_connector_cli.py check in every run.
@pytest.mark.thorough
async def test_connectors_are_added_labelled_attached_tested_and_removed(
    tmp_path: Path,
) -> None:
    state = ThirdParty(tools=list(TOOLS))
    async with (
        running(tmp_path, **ENV) as server,
        third_party_server(state) as remote_url,
        fake_slack() as slack,
        open_browser("connectors") as browser,
    ):
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        tab = await browser.new_tab(tolerate=TOLERATES)
        base = server.base_url
        listing = f"{base}/dashboard/w/acme/connectors"
        secrets = SECRETS
        pages: list[str] = []

        def add_remote() -> None:
            page = tab.page
            sign_in(tab, base, "alice", PASSWORD)
            _nav(tab, "Connectors")
            expect(page).to_have_url(listing)
            expect(page.get_by_text("No connectors yet")).to_be_visible()
            _checked(tab, "the empty connectors page", "empty", browser)
            page.get_by_label("Name").fill("third")
            page.get_by_label("MCP endpoint URL").fill(remote_url)
            page.get_by_role("button", name="Add Remote MCP connector").click()
            expect(page).to_have_url(f"{listing}/third")
            expect(page.get_by_role("status")).to_have_text(
                "Added Remote MCP connector 'third'. Tools of 'third': 40 new, 0 changed, "
                "0 removed, 0 unchanged."
            )
            rows = page.locator("#connector-tools tbody tr")
            expect(rows).to_have_count(40)
            # One line a tool: the table stays compact.
            heights = rows.evaluate_all("rs => rs.map(r => r.getBoundingClientRect().height)")
            assert max(heights) <= 40, heights
            height = page.evaluate("() => document.documentElement.scrollHeight")
            assert height < 2400, height
            _checked(tab, "the new connector's page", "connector", browser)

        await browser.run(add_remote)

        def accept_labels() -> None:
            page = tab.page
            search = page.get_by_label("Accept read for third_search")
            create = page.get_by_label("Accept write for third_create_issue")
            delete = page.get_by_label("Accept destructive for third_delete_repo")
            expect(search).to_be_checked()
            expect(create).to_be_checked()
            expect(delete).not_to_be_checked()
            expect(page.locator("#tool-delete_repo")).to_contain_text("tick to accept")
            expect(page.locator("#connector-tools")).to_contain_text(
                "A destructive suggestion is never ticked for you"
            )
            page.get_by_role("button", name="Accept suggested labels").click()
            expect(page.get_by_role("status")).to_have_text(
                "Labeled 39 tools as their remote suggests (38 read, 1 write)."
            )
            expect(page.get_by_label("Label of third_search", exact=True)).to_have_value("read")
            expect(page.get_by_label("Label of third_create_issue", exact=True)).to_have_value(
                "write"
            )
            expect(page.get_by_label("Label of third_delete_repo", exact=True)).to_have_value("")
            expect(page.locator("#tool-delete_repo td").nth(2)).to_have_text("write")
            # Only the destructive suggestion is left, unticked.
            expect(page.locator("#connector-tools input[type=checkbox]")).to_have_count(1)
            expect(delete).not_to_be_checked()
            _checked(tab, "labels accepted", "labels-accepted", browser)

        await browser.run(accept_labels)
        third = await server.store.find(Connector, name="third")
        assert third is not None
        labels = {
            t.name: t.label for t in await server.store.select(CachedTool, connector_id=third.id)
        }
        assert labels["search"] is Capability.READ
        assert labels["create_issue"] is Capability.WRITE
        assert labels["delete_repo"] is None
        audited = await server.store.select(AuditEntry, action="tool.label")
        assert len(audited) == 39 and {e.actor for e in audited} == {"admin:alice"}
        assert {e.detail["label"] for e in audited} == {"read", "write"}

        def tick_the_destructive_one_and_attach() -> None:
            page = tab.page
            page.get_by_label("Accept destructive for third_delete_repo").check()
            page.get_by_role("button", name="Accept suggested labels").click()
            expect(page.get_by_role("status")).to_have_text(
                "Labeled 1: third_delete_repo (destructive)."
            )
            expect(page.locator("#tool-delete_repo td").nth(2)).to_have_text("destructive")
            # One tool's label, chosen by hand with its row's select.
            page.get_by_label("Label of third_list_things_00", exact=True).select_option("write")
            page.get_by_role("button", name="Set the label of third_list_things_00").click()
            expect(_status(tab)).to_have_text("third_list_things_00 is labeled write.")
            expect(page.get_by_label("Label of third_list_things_00", exact=True)).to_have_value(
                "write"
            )
            expect(page.locator("#tool-list_things_00 td").nth(2)).to_have_text("write")
            page.get_by_label("Attach to").select_option("ops")
            page.get_by_role("button", name="Attach", exact=True).click()
            expect(page.get_by_role("status")).to_have_text("Connector 'third' is attached to ops.")
            expect(page.locator("#connector-groups li")).to_contain_text(["ops"])
            _checked(tab, "attached", "attached", browser)

        await browser.run(tick_the_destructive_one_and_attach)
        (by_hand,) = [
            e
            for e in await server.store.select(AuditEntry, action="tool.label")
            if e.target == "third_list_things_00" and e.detail["label"] == "write"
        ]
        assert by_hand.actor == "admin:alice" and by_hand.detail["previous_label"] == "read"

        # The group's endpoint offers the connector's tools with their labels, and runs them.
        async with sdk_session(server, "streamable") as session:
            listed = {t.name for t in (await session.list_tools()).tools}
            assert {"third_search", "third_create_issue", "third_delete_repo"} <= listed
            ran = await session.call_tool("third_search", {"q": "flaky test"})
            assert not ran.is_error and "third-party found: flaky test" in str(ran.content)
            state.failing.add("search")
            failed = await session.call_tool("third_search", {"q": "again"})
            assert failed.is_error
        assert state.calls == ["search", "search"]

        def health() -> str:
            tab.page.goto(listing)
            return tab.page.locator("#connector-third td.health").inner_text()

        shown = await wait_until(
            lambda: browser.run(health),
            lambda text: "2 calls in the last hour" in text,
            what="the calls in the connector's health",
        )
        assert "50% errors" in shown and "p50 " in shown and "refreshed" in shown, shown
        assert "third_search answered with an error" in shown, shown
        # The gate records how long each call that ran took.
        calls = await server.store.select(AuditEntry, action="tool.call")
        assert [c.detail["error"] for c in calls] == [False, True]
        assert all(isinstance(c.detail["duration_ms"], int) for c in calls)

        def test_refresh_and_deactivate() -> None:
            page = tab.page
            _checked(tab, "the listing with health", "listing", browser)
            page.get_by_role("link", name="third", exact=True).click()
            page.get_by_role("button", name="Test the connection").click()
            expect(page.get_by_role("status")).to_contain_text(
                "Connector 'third' works: third-party"
            )
            expect(page.get_by_role("status")).to_contain_text("40 tools")
            page.get_by_role("button", name="Refresh its tools").click()
            expect(page.get_by_role("status")).to_have_text(
                "Tools of 'third': 0 new, 0 changed, 0 removed, 40 unchanged."
            )
            page.get_by_role("button", name="Deactivate").click()
            expect(page.locator("#connector-state")).to_have_text("inactive")
            page.get_by_role("button", name="Activate").click()
            expect(page.locator("#connector-state")).to_have_text("active")
            page.get_by_role("button", name="Detach from ops").click()
            expect(_status(tab)).to_have_text("Connector 'third' is detached from ops.")
            expect(page.locator("#connector-groups li")).to_have_text(
                ["Not attached: no group offers its tools."]
            )
            expect(page.get_by_label("Attach to")).to_contain_text("ops")
            _checked(tab, "tested, refreshed and detached", "tested", browser)
            # A remote that is down: saved with the warning; a refresh warns again,
            # and its health shows the failure.
            _nav(tab, "Connectors")
            page.get_by_label("Name").fill("down")
            page.get_by_label("MCP endpoint URL").fill("http://127.0.0.1:9/mcp")
            page.get_by_role("button", name="Add Remote MCP connector").click()
            expect(page).to_have_url(f"{listing}/down")
            expect(_status(tab)).to_contain_text("Added Remote MCP connector 'down'. Warning:")
            page.get_by_role("button", name="Refresh its tools").click()
            expect(_status(tab)).to_contain_text("connector 'down'")
            expect(_status(tab)).to_have_class("notice error")
            expect(page.locator("#connector-health")).to_contain_text("last error")
            expect(page.locator("#connector-health")).to_contain_text("refresh: connector 'down'")
            _checked(tab, "a failed refresh", "refresh-failed", browser)

        await browser.run(test_refresh_and_deactivate)
        actions = [e.action for e in await server.store.select(AuditEntry)]
        for action in ("connector.add", "connector.attach", "connector.refresh"):
            assert action in actions, action
        assert actions.count("connector.deactivate") == actions.count("connector.activate") == 1
        assert actions.count("connector.detach") == 1
        refreshes = await server.store.select(AuditEntry, action="connector.refresh")
        assert sum(1 for e in refreshes if e.target == "acme/down" and e.detail["error"]) == 2

        def add_with_secrets() -> None:
            page = tab.page
            _nav(tab, "Connectors")
            page.get_by_role("navigation", name="Kind of connector").get_by_role(
                "link", name="GitHub"
            ).click()
            _checked(tab, "the GitHub form", "github-form", browser)
            page.get_by_label("Name").fill("gh")
            # Saving checks the URL with the guard; nothing is connected to.
            page.get_by_label("API base URL").fill("http://127.0.0.1:9")
            page.get_by_label("Token").fill(GITHUB_TOKEN)
            page.get_by_role("button", name="Add GitHub connector").click()
            expect(page).to_have_url(f"{listing}/gh")
            expect(page.get_by_role("status")).to_contain_text("Added GitHub connector 'gh'.")
            expect(page.locator("#connector-tools tbody tr").first).to_be_visible()
            pages.append(page.content())
            _checked(tab, "the GitHub connector", "github", browser)
            _nav(tab, "Connectors")
            page.get_by_role("navigation", name="Kind of connector").get_by_role(
                "link", name="Slack"
            ).click()
            _checked(tab, "the Slack form", "slack-form", browser)
            page.get_by_label("Name").fill("team")
            page.get_by_label("API base URL").fill(slack.api_url)
            page.get_by_label("Bot token").fill(BOT_TOKEN)
            page.get_by_role("button", name="Add Slack connector").click()
            expect(page).to_have_url(f"{listing}/team")
            expect(page.get_by_role("status")).to_have_text(
                "Added Slack connector 'team'. Its secret is stored encrypted and will not be "
                "shown again."
            )
            expect(page.locator("#connector-secret")).to_have_text(
                "in header Authorization, stored encrypted"
            )
            pages.append(page.content())
            page.get_by_role("button", name="Test the connection").click()
            expect(page.get_by_role("status")).to_contain_text("Connector 'team' works:")
            pages.append(page.content())
            _checked(tab, "the Slack connector", "slack", browser)
            _nav(tab, "Connectors")
            page.get_by_role("navigation", name="Kind of connector").get_by_role(
                "link", name="Incoming webhook"
            ).click()
            page.get_by_label("Name").fill("alerts")
            page.get_by_label("Webhook URL").fill(slack.hook_url(HOOK_PATH))
            page.get_by_role("button", name="Add Incoming webhook connector").click()
            expect(page).to_have_url(f"{listing}/alerts")
            expect(page.locator("#connector-url")).to_have_text(slack.base_url)
            expect(page.locator("#connector-groups")).to_have_count(0)
            pages.append(page.content())
            page.get_by_role("button", name="Test the connection").click()
            expect(page.get_by_role("status")).to_contain_text("Connector 'alerts' works:")
            pages.append(page.content())
            _checked(tab, "the incoming webhook", "incoming-webhook", browser)
            # A refused form comes back filled as typed, but the secret.
            _nav(tab, "Connectors")
            page.get_by_role("navigation", name="Kind of connector").get_by_role(
                "link", name="Stripe"
            ).click()
            page.get_by_label("Name").fill("team")
            page.get_by_label("API base URL").fill("http://127.0.0.1:9")
            page.get_by_label("Secret key").fill(STRIPE_KEY)
            page.get_by_role("button", name="Add Stripe connector").click()
            expect(page.get_by_role("status")).to_have_text(
                "connector 'team' already exists in workspace 'acme'"
            )
            expect(page.get_by_label("Name")).to_have_value("team")
            expect(page.get_by_label("API base URL")).to_have_value("http://127.0.0.1:9")
            expect(page.get_by_label("Secret key")).to_have_value("")
            # The refusal is a 400, which Chromium logs as a failed load.
            refused, tab.errors[:] = list(tab.errors), []
            assert len(refused) == 1 and "status of 400" in refused[0], refused
            pages.append(page.content())
            _checked(tab, "a refused form", "refused", browser)
            # Another name, the key typed again: added.
            page.get_by_label("Name").fill("pay")
            page.get_by_label("Secret key").fill(STRIPE_KEY)
            page.get_by_role("button", name="Add Stripe connector").click()
            expect(page).to_have_url(f"{listing}/pay")
            expect(_status(tab)).to_have_text(
                "Added Stripe connector 'pay'. Its secret is stored encrypted and will not be "
                "shown again."
            )
            expect(page.locator("#connector-secret")).to_have_text(
                "in header Authorization, stored encrypted"
            )
            expect(page.locator("#connector-tools tbody tr").first).to_be_visible()
            pages.append(page.content())
            _nav(tab, "Connectors")
            pages.append(page.content())
            _nav(tab, "Permissions")
            pages.append(page.content())

        await browser.run(add_with_secrets)
        for html in pages:
            for secret in secrets:
                assert secret not in html

        def remove() -> None:
            page = tab.page
            _nav(tab, "Connectors")
            page.get_by_role("link", name="team", exact=True).click()
            page.get_by_role("button", name="Remove").click()  # the dialog is accepted
            expect(page).to_have_url(listing)
            expect(page.get_by_role("status")).to_have_text(
                "Removed connector 'team', its tools and attachments."
            )
            assert tab.dialogs[-1].startswith("Remove connector team?")
            expect(page.locator("#connector-team")).to_have_count(0)
            for secret in secrets:
                assert secret not in page.content()
            _checked(tab, "removed", "removed", browser)

        await browser.run(remove)
        assert await server.store.find(Connector, name="team") is None

        await _on_a_phone(server, browser, remote_url)
        # The remote was sent the phone's connector's secret, which no page held.
        assert f"Bearer {REMOTE_SECRET}" in state.authorizations


async def _on_a_phone(server: Running, browser: Browser, remote_url: str) -> None:
    """The main actions at 390x844: every form fits and works."""
    phone = await browser.new_tab((390, 844), tolerate=TOLERATES)
    base = server.base_url
    listing = f"{base}/dashboard/w/acme/connectors"
    pages: list[str] = []

    def fitted(where: str, name: str | None = None) -> None:
        ok, measures = fits(phone)
        assert ok, (where, measures)
        pages.append(phone.page.content())
        if name is not None:
            _checked(phone, f"{where} on a phone", name, browser)
        else:
            phone.assert_clean(f"{where} on a phone")

    def views() -> None:
        sign_in(phone, base, "alice", PASSWORD)
        for path, name in (
            ("/dashboard/w/acme/connectors?kind=incoming_webhook", "incoming-webhook-form"),
            ("/dashboard/w/acme/connectors/alerts", "incoming-webhook"),
        ):
            phone.page.goto(base + path)
            fitted(path, name)

    def add_label_attach_detach_test() -> None:
        page = phone.page
        page.goto(listing)
        page.get_by_label("Name").fill("tracker")
        page.get_by_label("MCP endpoint URL").fill(remote_url)
        page.get_by_label("Secret (optional)").fill(REMOTE_SECRET)
        fitted("the filled add form", "listing")
        page.get_by_role("button", name="Add Remote MCP connector").click()
        expect(page).to_have_url(f"{listing}/tracker")
        expect(_status(phone)).to_contain_text(
            "Added Remote MCP connector 'tracker'. Its secret is stored encrypted"
        )
        expect(page.locator("#connector-secret")).to_have_text(
            "in header Authorization, stored encrypted"
        )
        fitted("the added connector")
        page.get_by_role("button", name="Accept suggested labels").click()
        expect(_status(phone)).to_have_text(
            "Labeled 39 tools as their remote suggests (38 read, 1 write)."
        )
        select = page.get_by_label("Label of tracker_delete_repo", exact=True)
        select.scroll_into_view_if_needed()
        select.select_option("destructive")
        page.get_by_role("button", name="Set the label of tracker_delete_repo").click()
        expect(_status(phone)).to_have_text("tracker_delete_repo is labeled destructive.")
        expect(page.get_by_label("Label of tracker_delete_repo", exact=True)).to_have_value(
            "destructive"
        )
        fitted("labels accepted and set", "connector")
        page.get_by_label("Attach to").select_option("sales")
        page.get_by_role("button", name="Attach", exact=True).click()
        expect(_status(phone)).to_have_text("Connector 'tracker' is attached to sales.")
        fitted("attached")
        page.get_by_role("button", name="Detach from sales").click()
        expect(_status(phone)).to_have_text("Connector 'tracker' is detached from sales.")
        page.get_by_role("button", name="Test the connection").click()
        expect(_status(phone)).to_contain_text("Connector 'tracker' works: third-party")
        fitted("detached and tested", "tested")
        page.goto(listing)
        expect(page.locator("#connector-tracker")).to_contain_text("no calls in the last hour")
        fitted("the listing", "listing-after")

    await browser.run(views)
    await browser.run(add_label_attach_detach_test)
    for html in pages:
        for secret in SECRETS:
            assert secret not in html
    labeled = [
        e.target
        for e in await server.store.select(AuditEntry, action="tool.label")
        if e.target.startswith("tracker_")
    ]
    assert len(labeled) == 40 and labeled[-1] == "tracker_delete_repo"
    actions = [
        e.action
        for e in await server.store.select(AuditEntry)
        if e.target in ("acme/sales/tracker", "acme/tracker")
    ]
    assert actions.count("connector.attach") == actions.count("connector.detach") == 1
