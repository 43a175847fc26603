"""The webhook's Deliveries tab in headless Chromium: refusals an operator can find.

A sender gets one delivery accepted and three refused (a wrong secret, a
body over the limit, a text body); an admin opens the webhook's page,
follows its Deliveries tab, reads each refusal's status and reason, opens
the refused request's headers (the secret it carried shows as ``***``),
filters to the refusals, and follows the accepted one to its event. The
page is photographed at a desktop and a phone width into
``test-artifacts/screenshots/`` and must fit both without errors.
"""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.domain.models import VerificationScheme
from tests.e2e.browser_support import fits, open_browser, sign_in
from tests.e2e.mcp_support import Running
from tests.e2e.polling import wait_until
from tests.e2e.webhook_support import Hook, assert_error, hook_server, make_hook, post

PASSWORD = "correct horse battery staple"
SECRET = "deploys-shared-secret-31c9"
WRONG = "an-old-secret-from-the-wiki"
WIDTHS = ((1280, 800), (390, 844))


async def _sender(server: Running) -> tuple[Hook, str]:
    """Webhook ``deploys`` with one accepted delivery and three refused; the event's id."""
    hook = await make_hook(
        server,
        "deploys",
        verification=VerificationScheme.SHARED_SECRET,
        secret=SECRET,
        max_body_bytes=1024,
    )
    signed = {"X-Webhook-Secret": SECRET}
    accepted = await post(hook.url, b'{"service": "api", "status": "deployed"}', signed)
    assert accepted.status_code == 202, accepted.text
    wrong = {"X-Webhook-Secret": WRONG, "User-Agent": "deploy-bot/1.4"}
    assert_error(await post(hook.url, b'{"service": "api"}', wrong), 401, "invalid_signature")
    large = json.dumps({"log": "x" * 4000}).encode()
    assert_error(await post(hook.url, large, signed), 413, "payload_too_large")
    text = {**signed, "Content-Type": "text/plain"}
    assert_error(await post(hook.url, b"deployed api", text), 415, "unsupported_media_type")
    # Refusals are logged as they are answered, never waited for: all four, before looking.
    await wait_until(
        lambda: server.store.webhook_deliveries(hook.webhook.id, limit=10),
        lambda rows: len(rows) == 4,
        what="four deliveries logged",
    )
    return hook, str(accepted.json()["event_id"])


async def test_the_deliveries_tab_shows_refusals_with_their_reasons(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server, open_browser("delivery-log") as browser:
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        hook, event_id = await _sender(server)
        base = server.base_url
        tab = await browser.new_tab(tolerate=("/favicon.ico",))
        problems: list[str] = []

        def read_the_log() -> None:
            page = tab.page
            sign_in(tab, base, "alice", PASSWORD)
            page.goto(f"{base}/dashboard/w/acme/webhooks/{hook.id}")
            page.get_by_role("navigation", name="Webhook").get_by_role(
                "link", name="Deliveries"
            ).click()
            expect(page).to_have_url(f"{base}/dashboard/w/acme/webhooks/{hook.id}/deliveries")
            rows = page.locator("#deliveries tbody tr")
            expect(page.locator("#delivery-count")).to_contain_text("4 requests shown, 3 refused")
            expect(rows).to_have_count(4)
            expect(rows.nth(0)).to_contain_text("415")
            expect(rows.nth(0)).to_contain_text("unsupported_media_type")
            expect(rows.nth(1)).to_contain_text("413")
            expect(rows.nth(1)).to_contain_text("payload_too_large")
            expect(rows.nth(2)).to_contain_text("401")
            expect(rows.nth(2)).to_contain_text("invalid_signature")
            expect(rows.nth(2)).to_contain_text("127.0.0.1")
            expect(rows.nth(3)).to_contain_text("202")
            expect(rows.nth(3)).to_contain_text("queued")
            # The refused request's headers: what it was, and its secret hidden.
            refused = rows.nth(2)
            refused.locator("summary").click()
            headers = refused.locator("pre")
            expect(headers).to_contain_text("x-webhook-secret: ***")
            expect(headers).to_contain_text("user-agent: deploy-bot/1.4")
            assert WRONG not in page.content()
            assert SECRET not in page.content()
            tab.assert_clean("the deliveries tab")
            for width, height in WIDTHS:
                page.set_viewport_size({"width": width, "height": height})
                browser.screenshot(tab, "deliveries")
                ok, measures = fits(tab)
                if not ok:
                    shot = browser.save(tab, "deliveries")
                    problems.append(f"deliveries at {width} px overflows: {measures} ({shot})")
            page.set_viewport_size({"width": WIDTHS[0][0], "height": WIDTHS[0][1]})

            # Only the refusals, then the accepted one's event.
            page.get_by_label("Outcome").select_option("refused")
            page.get_by_role("button", name="Filter").click()
            expect(page.locator("#delivery-count")).to_contain_text("3 requests shown, 3 refused")
            browser.screenshot(tab, "deliveries-refused")
            page.get_by_label("Outcome").select_option("accepted")
            page.get_by_role("button", name="Filter").click()
            expect(rows).to_have_count(1)
            rows.nth(0).get_by_role("link", name=event_id).click()
            expect(page).to_have_url(f"{base}/dashboard/events/{event_id}")
            expect(page.locator("ol.timeline")).to_contain_text('"service": "api"')
            tab.assert_clean("the filtered log and the event")

        await browser.run(read_the_log)
        assert not problems, "\n".join(problems)
