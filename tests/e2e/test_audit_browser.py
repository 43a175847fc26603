"""The audit viewer in headless Chromium: tool calls filtered, paged and exported.

A real agentws serves on loopback. A token makes tool calls over MCP that
the gate runs, denies and queues (:func:`tests.e2e.test_audit_viewer.make_calls`),
and one older call is in the log from two days ago. In ``/dashboard/audit``
the admin filters them by workspace and token, decision, tool and time,
pages through them two at a time, and downloads the export, whose lines are
the JSON ``agentws audit tail --json`` prints. Every page is photographed at
1280x800 and 390x844, checked with axe-core and for console errors, and
must fit a phone's width.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.domain.models import AuditEntry, McpToken
from agentws.domain.rules import utcnow
from agentws.doors.views import audit_json
from tests.e2e.browser_support import Tab, fits, open_browser, sign_in
from tests.e2e.mcp_support import running
from tests.e2e.test_audit_viewer import make_calls

PASSWORD = "correct horse battery staple"
TOLERATES = ("/favicon.ico",)
PHONE = (390, 844)


def _ids(tab: Tab) -> list[str]:
    rows = tab.page.locator("table.audit tbody tr[id]")
    return [str(rows.nth(n).get_attribute("id")) for n in range(rows.count())]


def _rows(tab: Tab) -> list[str]:
    return [" ".join(t.split()) for t in tab.page.locator("table.audit tbody tr").all_inner_texts()]


# Thorough tier only: a slow journey through pages whose actions
# test_audit_viewer.py::test_the_viewer_filters_pages_and_exports_tool_calls check in every run.
@pytest.mark.thorough
async def test_tool_calls_are_filtered_paged_and_exported(tmp_path: Path) -> None:
    async with running(tmp_path) as server, open_browser("audit") as browser:
        store = server.store
        counts = await make_calls(server)
        (token,) = await store.select(McpToken, name="tests")
        (group_id,) = {
            e.detail["group_id"] for e in await store.select(AuditEntry, action="tool.call")
        }
        await store.insert(
            AuditEntry(
                workspace_id=(await store.workspace_by_slug("acme")).id,
                actor=f"mcp:{token.id}",
                action="tool.call",
                target="search_context",
                detail={"group_id": group_id, "decision": "run", "outcome": "ok"},
                created_at=utcnow() - timedelta(days=2),
            )
        )
        await create_admin(store, "alice", password=PASSWORD, actor="t")
        base = server.base_url
        tab = await browser.new_tab(tolerate=TOLERATES)

        def filter_by_token_and_decision() -> None:
            page = tab.page
            sign_in(tab, base, "alice", PASSWORD, path="/dashboard/audit")
            expect(page.get_by_role("heading", level=1)).to_have_text("Audit")
            expect(page.get_by_role("link", name="Audit", exact=True)).to_be_visible()
            stamp = page.locator("table.audit time").first
            expect(stamp).to_have_attribute("datetime", re.compile(r"^\d{4}-"))
            expect(stamp).to_have_attribute("title", re.compile(r"UTC$"))
            tab.assert_clean("the audit log")
            browser.screenshot(tab, "all")
            # (The header's workspace switcher is labelled "Workspace" too.)
            expect(page.locator("#f-group")).to_be_disabled()
            page.locator("#f-workspace").select_option("acme")
            # The script reloads the page: the workspace's groups and tokens are in the menus.
            expect(page).to_have_url(re.compile(r"workspace=acme"))
            expect(page.locator("#f-group")).to_be_enabled()
            page.get_by_label("Group").select_option("ops")
            page.get_by_label("Token").select_option(label="ops/tests")
            page.get_by_label("Decision").select_option("deny")
            page.get_by_role("button", name="Filter").click()
            rows = _rows(tab)
            assert len(rows) == counts["deny"], rows
            assert all("read_context_document" in r and "token tests (ops)" in r for r in rows)
            expect(page.locator("table.audit .badge.decision-deny")).to_have_count(2)
            tab.assert_clean("filtered by token and decision")
            browser.screenshot(tab, "token-deny")

        await browser.run(filter_by_token_and_decision)

        def filter_by_tool_and_time() -> None:
            page = tab.page
            page.get_by_label("Decision").select_option("")
            page.get_by_label("Tool").fill("search_context")
            page.get_by_role("button", name="Filter").click()
            assert len(_rows(tab)) == counts["run"] + counts["queue"] + 1
            page.get_by_label("To", exact=True).fill("1d")
            page.get_by_role("button", name="Filter").click()
            (old,) = _rows(tab)
            assert "2 d ago" in old
            page.get_by_label("To", exact=True).fill("")
            page.get_by_label("From", exact=True).fill("1h")
            page.get_by_role("button", name="Filter").click()
            assert len(_rows(tab)) == counts["run"] + counts["queue"]
            assert "group=ops" in page.url and f"token={token.id}" in page.url
            tab.assert_clean("filtered by tool and time")
            browser.screenshot(tab, "tool-time")
            # Another workspace (all of them): the group and token of acme are cleared.
            page.locator("#f-workspace").select_option("")
            expect(page.locator("#f-group")).to_be_disabled()
            assert f"token={token.id}" not in page.url and "group=ops" not in page.url, page.url
            expect(page.get_by_label("Token")).to_have_value("")
            # Every actor's entries on search_context now, not the token's alone.
            assert len(_rows(tab)) > counts["run"] + counts["queue"]
            tab.assert_clean("the workspace changed")

        await browser.run(filter_by_tool_and_time)

        def page_through() -> list[list[str]]:
            page = tab.page
            page.goto(f"{base}/dashboard/audit?action=tool.call&limit=2")
            pages = [_ids(tab)]
            while page.get_by_role("link", name="Older →").count():
                page.get_by_role("link", name="Older →").first.click()
                pages.append(_ids(tab))
            page.get_by_role("link", name="← Newer").first.click()
            assert _ids(tab) == pages[-2]
            page.get_by_role("link", name="Newest").first.click()
            assert _ids(tab) == pages[0]
            tab.assert_clean("paged")
            browser.screenshot(tab, "paged")
            return pages

        pages = await browser.run(page_through)
        assert [len(p) for p in pages] == [2, 2, 2, 1]
        newest_first = sorted(
            await store.select(AuditEntry, action="tool.call"),
            key=lambda e: (e.created_at, e.id),
            reverse=True,
        )
        assert [i for p in pages for i in p] == [e.id for e in newest_first]

        def export() -> str:
            page = tab.page
            page.goto(f"{base}/dashboard/audit?token={token.id}")
            with page.expect_download() as info:
                page.get_by_role("link", name="Export JSON lines").click()
            download = info.value
            assert download.suggested_filename.startswith("audit-")
            assert download.suggested_filename.endswith(".jsonl")
            target = tmp_path / "export.jsonl"
            download.save_as(target)
            tab.assert_clean("the export")
            return target.read_text()

        exported = [json.loads(line) for line in (await browser.run(export)).splitlines()]
        stored = await store.select(AuditEntry, actor=f"mcp:{token.id}")
        stored.sort(key=lambda e: (e.created_at, e.id), reverse=True)
        assert exported == [json.loads(json.dumps(audit_json(e))) for e in stored]
        assert len(exported) == sum(counts.values()) + 1

        phone = await browser.new_tab(PHONE, tolerate=TOLERATES)

        def on_a_phone() -> None:
            sign_in(phone, base, "alice", PASSWORD, path="/dashboard/audit")
            phone.page.locator("#f-workspace").select_option("acme")
            expect(phone.page).to_have_url(re.compile(r"workspace=acme"))
            phone.page.get_by_label("Decision").select_option("queue")
            phone.page.get_by_role("button", name="Filter").click()
            expect(phone.page).to_have_url(re.compile(r"decision=queue"))
            assert len(_rows(phone)) == counts["queue"]
            ok, measures = fits(phone)
            assert ok, measures
            phone.assert_clean("the audit log on a phone")
            browser.screenshot(phone, "phone")

        await browser.run(on_a_phone)
