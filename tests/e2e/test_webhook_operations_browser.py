"""A failing webhook's page in headless Chromium: paused, activated, its failures replayed, tested.

A real agentws serves on loopback with a fake Messages API that refuses
every request while it is "down". Two failed events pause the webhook (its
alert says so); in the dashboard the admin sees it paused with its failure
streak, activates it again, changes its alert settings, replays its failed
events (a count, a confirmation page, then the replays run) and sends it a
test event, which lands on the test event's page. Each step is
photographed into ``test-artifacts/screenshots/`` and checked for console
errors; the webhook's page must fit a phone's width.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.domain.models import Event, EventStatus, Webhook
from tests.e2e.browser_support import fits, open_browser, sign_in
from tests.e2e.polling import wait_until
from tests.e2e.run_support import deliver, finished, hook
from tests.e2e.test_webhook_alerts import settled
from tests.e2e.test_webhook_replays import Model, all_replays_finished, served

PASSWORD = "correct horse battery staple"
TOLERATES = ("/favicon.ico",)


# Thorough tier only: a slow journey through pages whose actions test_webhook_replays.py,
# test_webhook_test_events.py and test_actions_browser.py check in every run.
@pytest.mark.thorough
async def test_a_paused_webhook_is_activated_replayed_and_tested_in_the_dashboard(
    tmp_path: Path,
) -> None:
    model = Model()
    async with served(tmp_path, model) as (server, _), open_browser("webhook-failures") as browser:
        await create_admin(server.store, "bob", password=PASSWORD, actor="t")
        issued = await hook(server, alert_after=2, pause_on_failure=True)
        failed = [await deliver(issued, {"n": n}) for n in range(2)]
        for event_id in failed:
            await finished(server.store, event_id)
        await settled(server.store, issued.id)
        model.down = False
        tab = await browser.new_tab(tolerate=TOLERATES)
        base = server.base_url
        page_url = f"{base}/dashboard/w/acme/webhooks/ci"

        def paused_page() -> None:
            sign_in(tab, base, "bob", PASSWORD)
            tab.page.goto(page_url)
            page = tab.page
            expect(page.locator("#webhook-status")).to_have_text("paused")
            expect(page.locator("#paused")).to_contain_text("by its failure alert")
            expect(page.locator("#failure-streak")).to_contain_text("2 events in a row")
            expect(page.locator("#failure-streak")).to_contain_text("alert posted")
            expect(page.locator("#replay-button")).to_have_text("Replay failed events (2)…")
            tab.assert_clean("the paused webhook's page")
            browser.screenshot(tab, "paused")
            page.get_by_role("button", name="Activate again").click()
            expect(page).to_have_url(page_url)
            expect(page.locator("#webhook-status")).to_have_text("active")
            expect(page.get_by_text("Webhook 'ci' is active.")).to_be_visible()
            tab.assert_clean("activated")

        await browser.run(paused_page)
        assert (await server.store.get(Webhook, issued.id)).active

        def change_alerts() -> None:
            page = tab.page
            page.get_by_label("Alert after").fill("5")
            page.get_by_label("Alerts channel").fill("local:alerts")
            page.get_by_label("On the alert").select_option("continue")
            page.get_by_role("button", name="Save").click()
            expect(page.get_by_text("Saved.")).to_be_visible()
            expect(page.locator("#alert-settings")).to_have_text(
                "after 5 failed events in a row, to local:alerts"
            )
            tab.assert_clean("the alert settings saved")

        await browser.run(change_alerts)
        changed = await server.store.get(Webhook, issued.id)
        assert (changed.alert_after, changed.alerts_channel, changed.pause_on_failure) == (
            5,
            "local:alerts",
            False,
        )

        def replay() -> None:
            page = tab.page
            page.get_by_label("Replays a minute").fill("60")
            page.locator("#replay-button").click()
            expect(page.get_by_role("heading", level=1)).to_have_text("Replay failed events of ci")
            expect(page.locator("#replay-summary")).to_contain_text(
                "2 failed events will be replayed, each once, at 60 a minute (the last 1 s after"
            )
            for event_id in failed:
                expect(page.get_by_role("link", name=event_id)).to_be_visible()
            tab.assert_clean("the replay's confirmation")
            browser.screenshot(tab, "replay-confirmation")
            page.get_by_role("button", name="Replay 2 events").click()
            expect(page).to_have_url(page_url)
            expect(
                page.get_by_text("Queued 2 replays of failed events, at 60/min.")
            ).to_be_visible()
            tab.assert_clean("replayed")

        await browser.run(replay)
        replays = await all_replays_finished(server, issued.id, 2)
        assert sorted(r.replay_of for r in replays if r.replay_of) == sorted(failed)
        assert all(r.status is EventStatus.DONE for r in replays)

        def replayed_page() -> None:
            tab.page.reload()
            expect(tab.page.locator("#replay-button")).to_have_text("Replay failed events (0)…")
            expect(tab.page.locator("#replay-button")).to_be_disabled()
            browser.screenshot(tab, "replayed")

        await browser.run(replayed_page)

        def test_event() -> str:
            page = tab.page
            page.get_by_label("Sample").select_option("github")
            page.get_by_role("button", name="Send a test event").click()
            expect(page).to_have_url(f"{base}/dashboard/events/" + page.url.rsplit("/", 1)[-1])
            expect(
                page.get_by_text("Test event (github) sent: the door answered 202")
            ).to_be_visible()
            expect(page.locator("ol.timeline")).to_contain_text("x-github-event: ping")
            tab.assert_clean("the test event's page")
            browser.screenshot(tab, "test-event")
            return page.url.rsplit("/", 1)[-1]

        event_id = await browser.run(test_event)
        event = await finished(server.store, event_id)
        assert event.status is EventStatus.DONE and event.headers["x-github-event"] == "ping"

        phone = await browser.new_tab((390, 844), tolerate=TOLERATES)

        def on_a_phone() -> None:
            sign_in(phone, base, "bob", PASSWORD)
            phone.page.goto(page_url)
            ok, measures = fits(phone)
            assert ok, measures
            phone.assert_clean("the webhook's page on a phone")
            browser.screenshot(phone, "webhook-page")

        await browser.run(on_a_phone)
        assert await wait_until(
            lambda: server.store.count(Event, webhook_id=issued.id),
            lambda n: n == 2 + 2 + 1,
            what="two failed events, their replays and a test event",
        )
