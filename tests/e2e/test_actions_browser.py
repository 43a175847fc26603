"""The dashboard's remaining actions, clicked in headless Chromium at a desktop and a phone width.

One real agentws serves on loopback (:func:`tests.e2e.mcp_support.running`)
with a recording third-party MCP server attached; one Chromium tab
(:mod:`tests.e2e.browser_support`) signs in once and, at 1280x800 and then
at 390x844, drives each action and reads its result: a webhook's capture
switched on and off, a webhook deactivated, another deleted, an event
replayed from its page; a remote tool labeled, a permission set and reset;
a call denied with a reason on its own page, calls approved in bulk; and,
with the remote down and back, a call that failed after its approval
retried. Every page it lands on is checked for console errors, for fitting
the viewport and with axe, and photographed into
``test-artifacts/screenshots/``; the store says the action really happened.

The second test serves an agentws with no workspace at all: the empty
home page, then (a workspace made) the copy buttons, which stay hidden
without JavaScript and show with it, and the empty workspace's Overview,
which says nothing happened yet instead of drawing empty charts.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
import trio
from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.approvals import decisions
from agentws.domain.models import Approval, ApprovalStatus, Event, EventStatus, Webhook
from agentws.server import serve
from agentws.service import Runtime, run_service
from agentws.tools import admin as tools_admin
from agentws.workspaces.admin import create_group, create_workspace
from tests.e2e.browser_support import DESKTOP, PHONE, Tab, landed, open_browser, sign_in
from tests.e2e.mcp_support import queued_call, running, settings_for
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.e2e.run_support import deliver, finished, hook

PASSWORD = "correct horse battery staple"
SETTINGS = {
    "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
    "AGENTWS_CONNECTOR_REFRESH_S": "0",
    # A call to the remote while it is down fails at once (connection refused); this bounds it.
    "AGENTWS_TOOL_TIMEOUT_S": "5",
}
WIDTHS = (DESKTOP, PHONE)
#: The every-page test of test_dashboard_browser reports the missing /favicon.ico.
TOLERATES = ("/favicon.ico",)
#: Calls each width decides: one denied on its page, two approved in bulk, one retried.
DENY, BULK, RETRY = "deny", "bulk", "retry"


def _name(width: int) -> str:
    return "desktop" if width == DESKTOP[0] else "phone"


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
# Thorough tier only: a slow journey through pages whose actions test_dashboard.py,
# test_webhook_capture.py, test_webhook_replays.py, test_tool_catalog.py and test_approval_runs.py
# check in every run (and test_dashboard_browser.py in a browser).
@pytest.mark.thorough
async def test_each_action_at_a_desktop_and_a_phone(tmp_path: Path) -> None:
    state = ThirdParty([tool("send", "Send a page"), tool("lookup", "Look up an order")])
    async with (
        running(tmp_path, with_library=False, **SETTINGS) as server,
        open_browser("actions") as browser,
    ):
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        await hook(server, "deploys", active=False)  # a draft, to capture
        staging = await hook(server, "staging")
        doomed = {w: await hook(server, f"old_{_name(w)}") for w, _ in WIDTHS}
        ci = await hook(server, "ci")
        original = await deliver(ci, {"build": 7, "ok": False})
        assert (await finished(server.store, original)).status is EventStatus.DONE
        tab = await browser.new_tab(tolerate=TOLERATES)
        base = server.base_url
        problems: list[str] = []

        def signed_in() -> None:
            sign_in(tab, base, "alice", PASSWORD)
            expect(tab.page).to_have_url(f"{base}/dashboard/w/acme/overview")
            tab.assert_clean("signing in")

        await browser.run(signed_in)

        def webhooks(width: int, height: int) -> str:
            """Capture on and off, deactivate, delete, replay; the replay's event id."""
            page, name = tab.page, _name(width)
            page.set_viewport_size({"width": width, "height": height})
            page.goto(f"{base}/dashboard/w/acme/webhooks/deploys")
            capture = page.locator("#capture")
            expect(capture.locator("h2 .badge")).to_have_text("off")
            capture.get_by_role("button", name="Capture deliveries").click()
            expect(page.get_by_role("status")).to_have_text(
                "Capturing: deliveries are kept as samples, never run."
            )
            expect(capture.locator("h2 .badge")).to_have_text("capturing")
            landed(browser, tab, f"capture-on-{name}", problems)
            capture.get_by_role("button", name="Stop capturing").click()
            expect(page.get_by_role("status")).to_have_text(
                "Capture is off: a draft refuses deliveries (403)."
            )
            expect(capture.locator("h2 .badge")).to_have_text("off")
            tab.assert_clean("capture off")

            page.goto(f"{base}/dashboard/w/acme/webhooks")
            row = page.get_by_role("row").filter(has_text="staging")
            expect(row.locator(".badge")).to_have_text("active")
            row.get_by_role("button", name="Deactivate").click()
            expect(page.get_by_role("status")).to_have_text("Webhook 'staging' is a draft.")
            expect(row.locator(".badge")).to_have_text("draft")
            landed(browser, tab, f"webhook-deactivated-{name}", problems)
            doomed_row = page.get_by_role("row").filter(has_text=f"old_{name}")
            doomed_row.get_by_role("button", name="Delete").click()  # the dialog is accepted
            expect(page.get_by_role("status")).to_have_text(
                f"Deleted webhook 'old_{name}': its URL answers 404 now."
            )
            expect(doomed_row).to_have_count(0)
            landed(browser, tab, f"webhook-deleted-{name}", problems)
            # Active again, for the other width to deactivate.
            row.get_by_role("button", name="Activate").click()
            expect(row.locator(".badge")).to_have_text("active")

            page.goto(f"{base}/dashboard/events/{original}")
            if width == PHONE[0]:
                page.get_by_label("with the webhook's current prompt").check()
            page.get_by_role("button", name="Replay").click()
            expect(page.get_by_role("status")).to_have_text("Replayed as this new event.")
            expect(page).not_to_have_url(f"{base}/dashboard/events/{original}")
            expect(page.get_by_role("link", name=original)).to_be_visible()  # "Replay of"
            landed(browser, tab, f"event-replayed-{name}", problems)
            return page.url.rsplit("/", 1)[-1]

        def permissions(width: int, height: int) -> None:
            """Label a remote tool, then take the label off; set a permission, then reset it."""
            page, name = tab.page, _name(width)
            page.set_viewport_size({"width": width, "height": height})
            page.goto(f"{base}/dashboard/w/acme/permissions?group=ops")
            row = page.get_by_role("row").filter(has_text="third_lookup")
            expect(row.locator(".badge")).to_have_text("write")
            row.get_by_label("Label of third_lookup").select_option("read")
            row.get_by_role("button", name="Label").click()
            expect(page.get_by_role("status")).to_have_text("third_lookup is labeled read.")
            expect(row.locator(".badge")).to_have_text("read")
            landed(browser, tab, f"tool-labeled-{name}", problems)
            row.get_by_label("Label of third_lookup").select_option("")
            row.get_by_role("button", name="Label").click()
            expect(page.get_by_role("status")).to_have_text(
                "third_lookup is labeled unlabeled (write)."
            )
            expect(row.locator(".badge")).to_have_text("write")

            permission = row.locator("td").nth(4)
            expect(permission).to_contain_text("requires_approval")
            row.get_by_label("Permission of third_lookup").select_option("deny")
            row.get_by_label("Where").select_option("group")
            row.get_by_role("button", name="Set").click()
            expect(page.get_by_role("status")).to_have_text("third_lookup: deny (group ops).")
            expect(permission).to_contain_text("deny")
            landed(browser, tab, f"permission-set-{name}", problems)
            row.get_by_label("Permission of third_lookup").select_option("default")
            row.get_by_role("button", name="Set").click()
            expect(page.get_by_role("status")).to_have_text(
                "third_lookup follows its capability's default again."
            )
            expect(permission).to_contain_text("requires_approval")
            tab.assert_clean("the permission reset")

        def approvals(width: int, height: int, deny: str, bulk: list[str]) -> None:
            """Deny one call on its page with a reason; approve two at once in the queue."""
            page, name = tab.page, _name(width)
            page.set_viewport_size({"width": width, "height": height})
            page.goto(f"{base}/dashboard/approvals/{deny}")
            expect(page.get_by_role("heading", level=1)).to_contain_text("pending")
            page.get_by_label("Reason (optional)").fill(f"not from the {name}")
            page.get_by_role("button", name="Deny").click()
            expect(page.get_by_role("status")).to_have_text("third_send: denied.")
            expect(page.get_by_role("heading", level=1)).to_contain_text("denied")
            expect(page.locator("dl.facts")).to_contain_text(f"admin:alice: not from the {name}")
            expect(page.get_by_role("button", name="Deny")).to_have_count(0)
            landed(browser, tab, f"approval-denied-{name}", problems)

            page.get_by_role("link", name="All approvals").click()
            for approval_id in bulk:
                page.get_by_label(f"Select third_send ({approval_id})").check()
            page.get_by_role("button", name="Approve selected").click()
            expect(page.get_by_role("status")).to_have_text("Approved 2 calls: 2 executed.")
            for approval_id in bulk:
                expect(page.get_by_label(f"Select third_send ({approval_id})")).to_have_count(0)
            landed(browser, tab, f"approvals-bulk-approved-{name}", problems)

        def retry(width: int, height: int, approval_id: str) -> str:
            """Retry a call that failed after its approval; the result shown."""
            page, name = tab.page, _name(width)
            page.set_viewport_size({"width": width, "height": height})
            page.goto(f"{base}/dashboard/approvals/{approval_id}")
            expect(page.get_by_role("heading", level=1)).to_contain_text("failed")
            page.get_by_label("Reason (optional)").fill("the remote is back")
            page.get_by_role("button", name="Retry").click()
            expect(page.get_by_role("status")).to_have_text("third_send: executed.")
            expect(page.get_by_role("heading", level=1)).to_contain_text("executed")
            expect(page.get_by_role("button", name="Retry")).to_have_count(0)
            result = page.locator("#result").inner_text()
            landed(browser, tab, f"approval-retried-{name}", problems)
            return result

        calls: dict[tuple[int, str], list[str]] = {}
        async with third_party_server(state) as url:
            await attach_remote(server.store, url, {})
            for width, _ in WIDTHS:
                for kind, n in ((DENY, 1), (BULK, 2), (RETRY, 1)):
                    calls[width, kind] = [
                        await queued_call(server, "third_send", {"q": f"{kind} {width} {i}"})
                        for i in range(n)
                    ]
            replays = [await browser.run(webhooks, w, h) for w, h in WIDTHS]
            for width, height in WIDTHS:
                await browser.run(permissions, width, height)
            for width, height in WIDTHS:
                await browser.run(
                    approvals, width, height, calls[width, DENY][0], calls[width, BULK]
                )
        # The remote is down: the approved calls fail.
        for width, _ in WIDTHS:
            [approval_id] = calls[width, RETRY]
            await decisions.approve(server.store, approval_id, actor="admin:alice", reason=None)
            with trio.fail_after(10):
                failed = await server.runtime.approval_runs.outcome(approval_id)
            assert failed.status is ApprovalStatus.FAILED, failed
        async with third_party_server(state):  # back, on the same port
            results = [await browser.run(retry, w, h, calls[w, RETRY][0]) for w, h in WIDTHS]

        # What the store says happened.
        # Deactivated at each width, and activated again after.
        assert (await server.store.get(Webhook, staging.id)).active
        deploys = await server.store.find(Webhook, name="deploys")
        assert deploys is not None and not deploys.capture and not deploys.active
        async with httpx2.AsyncClient(timeout=10) as http:
            for gone in doomed.values():
                assert await server.store.find(Webhook, id=gone.id) is None
                assert (await http.post(gone.url, json={"x": 1})).status_code == 404
        for replay_id in replays:
            replayed = await finished(server.store, replay_id)
            assert replayed.replay_of == original and replayed.status is EventStatus.DONE
        assert len(set(replays)) == 2
        [lookup] = [
            row.tool
            for row in await tools_admin.group_tool_list(server.store, "acme", "ops")
            if row.tool.name == "third_lookup"
        ]
        assert (lookup.capability.value, lookup.permission_source) == ("write", "default")
        for width, _ in WIDTHS:
            denied = await server.store.get(Approval, calls[width, DENY][0])
            assert denied.status is ApprovalStatus.DENIED
            assert (denied.decided_by, denied.reason) == (
                "admin:alice",
                f"not from the {_name(width)}",
            )
            for approval_id in calls[width, BULK]:
                approved = await server.store.get(Approval, approval_id)
                assert approved.status is ApprovalStatus.EXECUTED
            retried = await server.store.get(Approval, calls[width, RETRY][0])
            assert retried.status is ApprovalStatus.EXECUTED
        assert [r.strip() for r in results] == [
            f"third-party found: retry {w} 0" for w, _ in WIDTHS
        ]
        # Only approved calls reached the remote: four in bulk, then the two retried.
        assert sorted(a["q"] for a in state.arguments) == sorted(
            [f"bulk {w} {i}" for w, _ in WIDTHS for i in range(2)]
            + [f"retry {w} 0" for w, _ in WIDTHS]
        )
        assert await server.store.count(Event, webhook_id=ci.id) == 3
    assert not problems, "\n".join(problems)


@asynccontextmanager
async def _unseeded(tmp_path: Path) -> AsyncIterator[tuple[str, Runtime]]:
    """agentws on a free loopback port with nothing in it (no workspace); its URL and runtime."""
    settings = settings_for(tmp_path)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        runtime: Runtime = await nursery.start(functools.partial(run_service, settings))
        binds = await nursery.start(
            functools.partial(serve, settings, shutdown_trigger=stop.wait, runtime=runtime)
        )
        try:
            yield binds[0], runtime
        finally:
            stop.set()


async def test_the_empty_home_page_and_copy_buttons_without_scripts(tmp_path: Path) -> None:
    async with _unseeded(tmp_path) as (base, runtime), open_browser("no-workspace") as browser:
        await create_admin(runtime.store, "alice", password=PASSWORD, actor="t")
        tab = await browser.new_tab(tolerate=TOLERATES)
        problems: list[str] = []

        def empty_home() -> None:
            sign_in(tab, base, "alice", PASSWORD)
            for width, height in WIDTHS:
                tab.page.set_viewport_size({"width": width, "height": height})
                tab.page.goto(f"{base}/dashboard/")
                expect(tab.page).to_have_url(f"{base}/dashboard/")
                expect(tab.page.get_by_role("heading", level=1)).to_have_text("No workspace yet")
                tab.page.get_by_role("main").get_by_role("link", name="Workspaces").click()
                expect(tab.page).to_have_url(f"{base}/dashboard/workspaces")
                tab.page.go_back()
                landed(browser, tab, "empty-home", problems)

        await browser.run(empty_home)
        await create_workspace(runtime.store, "acme", name="Acme", actor="t")
        await create_group(runtime.store, "acme", "ops", name=None, actor="t")
        plain = await browser.new_tab(PHONE, tolerate=TOLERATES, scripts=False)

        def copy_buttons(on: Tab, scripts: bool) -> int:
            """The endpoint URL's copy button: hidden without scripts, shown with them."""
            sign_in(on, base, "alice", PASSWORD)
            on.page.goto(f"{base}/dashboard/w/acme/endpoints")
            expect(on.page.locator("#url-ops")).to_contain_text("/mcp/g/acme/ops")
            buttons = on.page.locator("button[data-copy]")
            if scripts:
                expect(buttons.first).to_be_visible()
                landed(browser, on, "endpoints", problems)
            else:
                for i in range(buttons.count()):
                    expect(buttons.nth(i)).to_be_hidden()
                # Without scripts nothing can be evaluated in the page: no axe, no fits().
                browser.screenshot(on, "endpoints-no-scripts", accessible=False)
                on.assert_clean("the endpoints page without scripts")
            return buttons.count()

        assert await browser.run(copy_buttons, plain, False) > 0
        assert await browser.run(copy_buttons, tab, True) > 0

        def empty_overview(on: Tab, scripts: bool) -> None:
            """A workspace where nothing happened: a sentence and two links, no empty charts."""
            on.page.goto(f"{base}/dashboard/w/acme/overview")
            empty = on.page.locator("#overview-empty")
            expect(empty).to_be_visible()
            expect(empty).to_contain_text("Nothing yet in the last hour.")
            expect(empty.get_by_role("link", name="create a webhook")).to_be_visible()
            expect(on.page.locator(".charts")).to_be_hidden()
            if scripts:
                # Its script drew no chart of empty axes.
                drawn = on.page.evaluate(
                    "() => [...document.querySelectorAll('canvas')].filter(Chart.getChart).length"
                )
                assert drawn == 0
                landed(browser, on, "overview-empty", problems)
            else:
                on.assert_clean("the empty overview without scripts")

        await browser.run(empty_overview, plain, False)
        await browser.run(empty_overview, tab, True)
    assert not problems, "\n".join(problems)
