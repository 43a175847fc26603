"""Capture and "Try a prompt" in headless Chromium, with the real model client.

An admin creates a draft that captures in the dashboard; a sender delivers
to its URL (answered 202 captured); the webhook's page lists the sample,
and its "Try a prompt" form, filled with the webhook's prompt, runs the
agent with a candidate prompt on it. The model (a fake Messages API on
loopback) asks for a read, a write and a destructive tool of a recording
third-party MCP server: the page shows the message it would post and each
call with what became of it, and only the read reached the remote. Then the
webhook is activated and keeps its sample. Every page is photographed into
``test-artifacts/screenshots/`` at a desktop and a phone width, and checked
for overflow and console errors.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.domain.models import Approval, ChatMessage, Event, Webhook
from tests.e2e.browser_support import fits, open_browser, sign_in
from tests.e2e.fake_anthropic import Turn
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS
from tests.e2e.test_prompt_try import ASKS, CANDIDATE, FINAL, _remote, _world
from tests.e2e.test_webhook_capture import captured

PASSWORD = "correct horse battery staple"
WIDTHS = ((1280, 800), (390, 844))
#: The journey leaves the missing /favicon.ico to the every-page test, which reports it.
TOLERATES = ("/favicon.ico",)


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
# Thorough tier only: a slow journey through pages whose actions test_webhook_capture.py and
# test_prompt_try.py check in every run.
@pytest.mark.thorough
async def test_capture_a_delivery_and_try_a_prompt_on_it_in_the_dashboard(
    tmp_path: Path,
) -> None:
    state = _remote()
    async with (
        _world(tmp_path, [ASKS, Turn(FINAL), ASKS, Turn(FINAL)], state) as (server, fake),
        open_browser("capture") as browser,
    ):
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        tab = await browser.new_tab(tolerate=TOLERATES)
        base = server.base_url
        problems: list[str] = []

        def check(name: str) -> None:
            browser.screenshot(tab, name)
            ok, measures = fits(tab)
            if not ok:
                shot = browser.save(tab, name)
                problems.append(f"{name} overflows: {measures} (see {shot.name})")
            if tab.errors:
                problems.append(f"{name}: " + "; ".join(tab.errors))
                tab.errors.clear()

        def create_capturing_draft() -> str:
            sign_in(tab, base, "alice", PASSWORD)
            page = tab.page
            expect(page).to_have_url(f"{base}/dashboard/w/acme/overview")
            page.goto(f"{base}/dashboard/w/acme/webhooks")
            page.get_by_label("Name").fill("deploys")
            page.get_by_label("Channel").fill("local:ops")
            page.get_by_label("Prompt").fill("Summarise the deploy.")
            page.get_by_label("Group (tools)").select_option("ops")
            page.get_by_label("State").select_option("capture")
            page.get_by_role("button", name="Create webhook").click()
            expect(page.get_by_role("heading", level=1)).to_have_text("Webhook deploys created")
            url = page.locator("#webhook-url").inner_text()
            tab.assert_clean("the created webhook")
            return url

        url = await browser.run(create_capturing_draft)
        async with httpx2.AsyncClient(timeout=10) as http:
            # The URL shown names the configured base; the server listens on a free port.
            hook_url = base + "/hooks/" + url.split("/hooks/")[1]
            sent = await http.post(hook_url, json={"deploy": 42, "status": "failed"})
        sample_id = captured(sent)

        def see_the_sample(width: int, height: int) -> None:
            tab.page.set_viewport_size({"width": width, "height": height})
            tab.page.goto(f"{base}/dashboard/w/acme/webhooks/deploys")
            capture = tab.page.locator("#capture")
            expect(capture.locator("h2 .badge")).to_have_text("capturing")
            expect(capture.locator("#samples")).to_contain_text(sample_id)
            expect(tab.page.get_by_label("Candidate prompt")).to_have_value("Summarise the deploy.")
            expect(tab.page.get_by_label("Try it on")).to_have_value(f"sample:{sample_id}")
            check("webhook-capturing")

        def try_a_prompt(width: int, height: int) -> list[tuple[str, str]]:
            tab.page.set_viewport_size({"width": width, "height": height})
            page = tab.page
            page.goto(f"{base}/dashboard/w/acme/webhooks/deploys")
            page.get_by_label("Candidate prompt").fill(CANDIDATE)
            page.get_by_role("button", name="Try it").click()
            expect(page.get_by_role("heading", level=1)).to_contain_text("Try a prompt")
            expect(page.locator("#try-message")).to_contain_text(FINAL)
            # The form is back as sent, to try again.
            expect(page.get_by_label("Candidate prompt")).to_have_value(CANDIDATE)
            rows = page.locator("#try-calls tbody tr")
            expect(rows).to_have_count(3)
            found = [
                (
                    rows.nth(i).locator("td code").first.inner_text(),
                    rows.nth(i).locator(".badge").inner_text(),
                )
                for i in range(3)
            ]
            check("try-a-prompt")
            return found

        def activate_and_keep_the_sample() -> None:
            page = tab.page
            page.set_viewport_size({"width": WIDTHS[0][0], "height": WIDTHS[0][1]})
            page.goto(f"{base}/dashboard/w/acme/webhooks")
            row = page.get_by_role("row").filter(has_text="deploys")
            row.get_by_role("button", name="Activate").click()
            expect(page.get_by_role("status")).to_contain_text("is active")
            page.get_by_role("link", name="deploys", exact=True).click()
            expect(page.locator("#capture h2 .badge")).to_have_text("on, while a draft")
            expect(page.locator("#samples")).to_contain_text(sample_id)
            check("webhook-activated")

        for width, height in WIDTHS:
            await browser.run(see_the_sample, width, height)
        tried = [await browser.run(try_a_prompt, width, height) for width, height in WIDTHS]
        await browser.run(activate_and_keep_the_sample)
        webhook = await server.store.find(Webhook, name="deploys")
        approvals = await server.store.select(Approval)
        posted = await server.store.select(ChatMessage)
        stored = await server.store.select(Event)

    expected = [
        ("third_search", "ran"),
        ("third_send", "would queue for approval"),
        ("third_wipe", "would ask for confirmation"),
    ]
    assert tried == [expected, expected]
    assert state.calls == ["search", "search"]  # one read per try; nothing else reached it
    assert approvals == [] and posted == [] and stored == []
    assert webhook is not None and webhook.active and webhook.capture
    assert len(fake.requests) == 4
    assert not problems, "\n".join(problems)
