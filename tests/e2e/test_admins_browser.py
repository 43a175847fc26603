"""Admins and admin API tokens in headless Chromium.

A real agentws serves on loopback. Alice creates an admin with a generated
password (shown once, with a copy button) and one with a typed password;
the new admin signs in with the generated one in a browser of their own.
She creates an admin API token (shown once, with a copy button), which
works against ``/api/v1`` with httpx2, revokes it (after a confirmation),
after which it gets 401, and deletes an admin. Every page is photographed
at 1280x800 and 390x844, checked with axe-core and for console errors, and
must fit a phone's width.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx2
import pytest
from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.domain.models import Admin, AuditEntry
from tests.e2e.browser_support import fits, open_browser, sign_in
from tests.e2e.mcp_support import running

PASSWORD = "correct horse battery staple"
TOLERATES = ("/favicon.ico",)
PHONE = (390, 844)


# Thorough tier only: a slow journey through pages whose actions
# test_audit_viewer.py::test_admins_and_their_api_tokens_from_the_dashboard check in every run.
@pytest.mark.thorough
async def test_admins_and_admin_api_tokens_are_managed_in_the_dashboard(tmp_path: Path) -> None:
    async with running(tmp_path) as server, open_browser("admins") as browser:
        store = server.store
        await create_admin(store, "alice", password=PASSWORD, actor="t")
        base = server.base_url
        tab = await browser.new_tab(tolerate=TOLERATES)

        def create_admins() -> str:
            page = tab.page
            sign_in(tab, base, "alice", PASSWORD)
            page.get_by_role("link", name="Admins", exact=True).click()
            expect(page.get_by_role("heading", level=1)).to_have_text("Admins")
            expect(page.get_by_text("the only admin")).to_be_visible()
            tab.assert_clean("the admins page")
            browser.screenshot(tab, "list")
            page.get_by_label("Username").fill("bob")
            page.get_by_role("button", name="Create admin").click()
            expect(page.get_by_role("heading", level=1)).to_have_text("Admin bob created")
            password = page.locator("#admin-password").inner_text()
            page.get_by_role("button", name="Copy the password").click()
            expect(page.locator('[data-copy-status="admin-password"]')).to_have_text(
                re.compile("Copied|Selected")
            )
            tab.assert_clean("an admin created")
            browser.screenshot(tab, "created")
            page.get_by_role("link", name="Back to the admins").click()
            page.get_by_label("Username").fill("carol")
            page.get_by_label("Password").fill("carol's own long password")
            page.get_by_role("button", name="Create admin").click()
            expect(page.get_by_text("carol signs in with the password you typed.")).to_be_visible()
            expect(page.locator("#admin-password")).to_have_count(0)
            page.get_by_role("link", name="Back to the admins").click()
            page.get_by_label("Username").fill("dave")
            page.get_by_label("Password").fill("short")
            # The browser holds a password under 12 characters back; the server would refuse it.
            page.get_by_role("button", name="Create admin").click()
            expect(page.get_by_role("heading", level=1)).to_have_text("Admins")
            tab.assert_clean("the admins created")
            return password

        password = await browser.run(create_admins)
        assert await store.find(Admin, username="dave") is None
        bobs = await browser.new_tab(tolerate=TOLERATES)

        def bob_signs_in() -> None:
            sign_in(bobs, base, "bob", password, path="/dashboard/admins")
            expect(bobs.page.locator(".who")).to_contain_text("bob")
            expect(bobs.page.get_by_role("heading", level=1)).to_have_text("Admins")
            bobs.assert_clean("bob signed in")

        await browser.run(bob_signs_in)

        def create_token() -> str:
            page = tab.page
            page.get_by_label("New token for").select_option("alice")
            page.get_by_label("Name", exact=True).fill("deploy-script")
            page.get_by_role("button", name="Create token").click()
            expect(page.get_by_role("heading", level=1)).to_have_text(
                "Admin API token deploy-script created"
            )
            secret = page.locator("#admin-token-secret").inner_text()
            expect(page.locator("#admin-token-curl")).to_contain_text(f"Bearer {secret}")
            page.get_by_role("button", name="Copy the token").click()
            tab.assert_clean("a token created")
            browser.screenshot(tab, "token-created")
            page.get_by_role("link", name="Back to the admins").click()
            row = page.get_by_role("row", name=re.compile("deploy-script"))
            expect(row).to_contain_text("never")
            assert secret not in page.content()
            return secret

        secret = await browser.run(create_token)
        assert secret.startswith("agwa_")
        async with httpx2.AsyncClient(
            base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {secret}"}, timeout=10
        ) as api:
            assert (await api.get("/workspaces")).status_code == 200

            def used_and_revoked() -> None:
                page = tab.page
                page.reload()
                row = page.get_by_role("row", name=re.compile("deploy-script"))
                expect(row.locator("time")).to_have_count(2)  # created, and now used
                expect(row).to_contain_text("active")
                row.get_by_role("button", name="Revoke deploy-script").click()
                expect(page.get_by_text("Revoked admin API token deploy-script")).to_be_visible()
                expect(page.get_by_role("row", name=re.compile("deploy-script"))).to_contain_text(
                    "revoked"
                )
                assert any("Revoke deploy-script?" in d for d in tab.dialogs)
                tab.assert_clean("a token revoked")
                browser.screenshot(tab, "token-revoked")

            await browser.run(used_and_revoked)
            refused = await api.get("/workspaces")
            assert refused.status_code == 401

        def delete_bob() -> None:
            page = tab.page
            page.get_by_role("button", name="Delete admin bob").click()
            expect(page.get_by_text("Deleted admin bob")).to_be_visible()
            expect(page.get_by_role("button", name="Delete admin bob")).to_have_count(0)
            tab.assert_clean("an admin deleted")

        await browser.run(delete_bob)
        assert await store.find(Admin, username="bob") is None
        actions = {e.action for e in await store.select(AuditEntry, actor="admin:alice")}
        assert {"admin.create", "admin_token.create", "admin_token.revoke", "admin.delete"} <= (
            actions
        )

        phone = await browser.new_tab(PHONE, tolerate=TOLERATES)

        def on_a_phone() -> None:
            sign_in(phone, base, "carol", "carol's own long password", path="/dashboard/admins")
            expect(phone.page.get_by_role("heading", level=1)).to_have_text("Admins")
            ok, measures = fits(phone)
            assert ok, measures
            phone.assert_clean("the admins page on a phone")
            browser.screenshot(phone, "phone")
            phone.page.get_by_label("Username").fill("dave")
            phone.page.get_by_role("button", name="Create admin").click()
            expect(phone.page.get_by_role("heading", level=1)).to_have_text("Admin dave created")
            expect(phone.page.locator("#admin-password")).not_to_be_empty()
            ok, measures = fits(phone)
            assert ok, measures
            phone.assert_clean("an admin created on a phone")
            browser.screenshot(phone, "phone-created")
            phone.page.get_by_role("link", name="Back to the admins").click()
            phone.page.get_by_label("New token for").select_option("carol")
            phone.page.get_by_label("Name", exact=True).fill("phone")
            phone.page.get_by_role("button", name="Create token").click()
            ok, measures = fits(phone)
            assert ok, measures
            browser.screenshot(phone, "phone-token-created")

        await browser.run(on_a_phone)
