"""Rotating a webhook's URL and secret in the dashboard, in headless Chromium.

An admin issues a new URL (shown once) with a grace period; deliveries
through both URLs are counted on the webhook's page; stopping the previous
URL early makes it answer 404. A signing secret is rotated the same way.
Pages are photographed into ``test-artifacts/screenshots/``.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.domain.models import VerificationScheme
from tests.e2e.browser_support import fits, open_browser, sign_in
from tests.e2e.webhook_support import deliver_github_push, hook_server, make_hook

PASSWORD = "correct horse battery staple"
OLD_SECRET = "gh-old-secret-1f6c2a"
NEW_SECRET = "gh-new-secret-77b0e4"


async def test_rotate_the_url_and_the_secret_in_the_dashboard(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server, open_browser("rotation") as browser:
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        hook = await make_hook(
            server, "ci", verification=VerificationScheme.GITHUB, secret=OLD_SECRET
        )
        base = server.base_url
        page_url = f"{base}/dashboard/w/acme/webhooks/{hook.id}"
        assert await deliver_github_push(hook.url, OLD_SECRET, "before") == 202
        tab = await browser.new_tab(tolerate=("/favicon.ico",))

        def rotate_url() -> str:
            sign_in(tab, base, "alice", PASSWORD)
            tab.page.goto(page_url)
            expect(tab.page.locator("#url-rotation")).to_contain_text("generation 1")
            tab.page.select_option("#url-grace", "24h")
            tab.page.get_by_role("button", name="Issue a new URL").click()
            expect(tab.page.get_by_role("heading", level=1)).to_contain_text("a new URL")
            expect(tab.page.get_by_text("keeps working until")).to_be_visible()
            shown = tab.page.locator("#webhook-url").inner_text()
            tab.assert_clean("the new URL")
            browser.screenshot(tab, "new-url")
            return shown

        shown = await browser.run(rotate_url)
        new_url = base + "/hooks/" + shown.split("/hooks/")[1]
        assert new_url != hook.url
        assert await deliver_github_push(hook.url, OLD_SECRET, "old-url") == 202
        for n in range(2):
            assert await deliver_github_push(new_url, OLD_SECRET, f"new-url-{n}") == 202

        def see_the_move_then_stop_the_old_url() -> None:
            tab.page.goto(page_url)
            rotation = tab.page.locator("#url-rotation")
            expect(rotation).to_contain_text("generation 2")
            expect(tab.page.locator("#via-previous-url")).to_have_text("1")
            expect(tab.page.locator("#via-new-url")).to_have_text("2")
            previous = tab.page.get_by_role("cell", name="URL 1 (previous) · secret 1")
            expect(previous).to_have_count(2)  # the delivery before the rotation, and one after
            tab.assert_clean("the rotation in progress")
            ok, measures = fits(tab)
            assert ok, measures
            browser.screenshot(tab, "in-grace")
            tab.page.get_by_role("button", name="Stop the previous URL now").click()
            expect(tab.page.get_by_text("The previous URL answers 404 now.")).to_be_visible()
            expect(tab.page.locator("#url-rotation")).not_to_contain_text("previous URL works")

        await browser.run(see_the_move_then_stop_the_old_url)
        assert await deliver_github_push(hook.url, OLD_SECRET, "too-late") == 404
        assert await deliver_github_push(new_url, OLD_SECRET, "still-fine") == 202

        def rotate_the_secret() -> None:
            tab.page.goto(page_url)
            tab.page.fill("#new-secret", NEW_SECRET)
            tab.page.select_option("#secret-grace", "1h")
            tab.page.get_by_role("button", name="Use the new secret").click()
            expect(tab.page.get_by_text("verifies with its new secret")).to_be_visible()
            expect(tab.page.locator("#secret-rotation")).to_contain_text("previous secret verifies")
            tab.assert_clean("the secret rotated")
            browser.screenshot(tab, "secret")

        await browser.run(rotate_the_secret)
        assert await deliver_github_push(new_url, NEW_SECRET, "new-secret") == 202
        assert await deliver_github_push(new_url, OLD_SECRET, "old-secret") == 202

        def stop_the_old_secret() -> None:
            tab.page.reload()
            tab.page.get_by_role("button", name="Stop the previous secret now").click()
            expect(
                tab.page.get_by_text("The previous secret verifies nothing now.")
            ).to_be_visible()

        await browser.run(stop_the_old_secret)
        assert await deliver_github_push(new_url, OLD_SECRET, "old-secret-late") == 401
        assert await deliver_github_push(new_url, NEW_SECRET, "new-secret-again") == 202
