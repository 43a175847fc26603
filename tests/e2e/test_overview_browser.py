"""The Overview in headless Chromium: what each chart is given, and its live refresh.

A real agentws serves on loopback with its model at a fake Messages API
that fails the events asking for it; the test's trio loop drives a known
workload (events done and failed through the webhook door, deliveries it
refuses, tool calls over MCP), then Chromium signs in, lands on the Overview and reads what
every Chart.js chart was given (``Chart.getChart(canvas).data``, the
library's own API) and the figures above them. One more event then shows
up after a refresh of the page's data, without a reload. Both widths are
photographed and checked for overflow, accessibility (axe), console
errors and Content-Security-Policy violations.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from cryptography.fernet import Fernet
from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.domain.models import EventStatus
from agentws.rollups.overview import read_overview
from tests.e2e.axe_support import assert_accessible
from tests.e2e.browser_support import Browser, Tab, fits, open_browser, sign_in
from tests.e2e.fake_anthropic import API_KEY, Failure, Reply, Turn, fake_anthropic
from tests.e2e.mcp_support import Running, running, sdk_session
from tests.e2e.polling import wait_until
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS
from tests.e2e.run_support import MODEL, deliver, finished, hook

PASSWORD = "correct horse battery staple"
DONE, FAILED, CALLS, REFUSED = 4, 2, 3, 2
FAIL = {"outcome": "please-fail"}
WIDTHS = ((1280, 800), (390, 844))
CHARTS = (
    "events_received",
    "events_done",
    "events_failed",
    "latency_ms",
    "refused",
    "approvals",
    "sessions",
    "tool_calls",
    "model_tokens",
)
# Every Content-Security-Policy violation of the page, as the page reports it
# (Chromium also logs them to the console, which assert_clean reads).
CSP_WATCH = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  const where = `${e.sourceFile}:${e.lineNumber}`;
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${where}`);
});
"""
# What each chart was given: its labels, and each dataset's label and values.
CHART_DATA = """
() => Object.fromEntries([...document.querySelectorAll("canvas[id^=canvas-]")].map((canvas) => {
  const chart = Chart.getChart(canvas);
  return [canvas.id.slice("canvas-".length), chart && {
    type: chart.config.type,
    labels: chart.data.labels,
    datasets: chart.data.datasets.map((d) => ({label: d.label, data: d.data})),
  }];
}))
"""


def _script(request: dict[str, Any]) -> Reply:
    if "please-fail" in json.dumps(request):
        return Failure(400, "the request was refused (a test)")
    return Turn("All is well.")


@asynccontextmanager
async def served(tmp_path: Path) -> AsyncIterator[Running]:
    """agentws whose model fails the events that ask for it, with admin alice."""
    async with fake_anthropic(_script) as fake:
        settings = {
            "AGENTWS_SECRET_KEY": Fernet.generate_key().decode(),
            "AGENTWS_RETRY_BASE_S": "0.02",
            "AGENTWS_MODEL": MODEL,
            "ANTHROPIC_API_KEY": API_KEY,
            "ANTHROPIC_BASE_URL": fake.base_url,
        }
        async with running(tmp_path, with_library=True, **settings) as server:
            await create_admin(server.store, "alice", password=PASSWORD, actor="t")
            yield server


def _sum(values: list[Any]) -> float:
    return sum(v for v in values if v is not None)


def _by_label(chart: dict[str, Any]) -> dict[str, list[Any]]:
    return {d["label"]: d["data"] for d in chart["datasets"]}


def _figures(tab: Tab) -> dict[str, str]:
    figures: dict[str, str] = tab.page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll("[data-total]")]
             .map((node) => [node.dataset.total, node.textContent]))"""
    )
    return figures


def _check_page(browser: Browser, tab: Tab, name: str) -> None:
    """Drawn, fitting, accessible, clean, photographed."""
    page = tab.page
    for series in CHARTS:
        expect(page.locator(f"#canvas-{series}")).to_be_visible()
        # Drawn, its table folded under it (still there, and named).
        expect(page.locator(f"#chart-{series} details")).not_to_have_attribute("open", "")
    ok, measures = fits(tab)
    assert ok, f"{name}: {measures}"
    assert_accessible(tab, name)
    browser.screenshot(tab, name)
    assert page.evaluate("() => window.__cspViolations") == [], name
    tab.assert_clean(name)


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_the_overview_charts_a_workload_and_follows_it_live(tmp_path: Path) -> None:
    async with served(tmp_path) as server, open_browser("overview") as browser:
        ci = await hook(server, "ci", group="ops")
        # A name that would read otherwise drawn as it is: its legend shows the escape.
        await hook(server, "deploys\u202eyalp")
        sent = [await deliver(ci, {"build": n}) for n in range(DONE)]
        sent += [await deliver(ci, {**FAIL, "n": n}) for n in range(FAILED)]
        statuses = [(await finished(server.store, event_id)).status for event_id in sent]
        assert statuses == [EventStatus.DONE] * DONE + [EventStatus.FAILED] * FAILED
        async with httpx2.AsyncClient(timeout=10) as http:
            for _ in range(REFUSED):
                refused = await http.post(
                    ci.url, content=b"{not json", headers={"Content-Type": "application/json"}
                )
                assert refused.status_code == 400, refused.text
        # The door logs its refusals in the background: counted once they are stored.
        await wait_until(
            lambda: read_overview(server.store, ci.webhook.workspace_id, "1h"),
            lambda data: data["totals"]["refused"] == REFUSED,
            what="the refusals in the rollup's figures",
        )
        async with sdk_session(server, "streamable") as session:
            for _ in range(CALLS):
                found = await session.call_tool("search_context", {"query": "refund"})
                assert not found.is_error
        await wait_until(
            lambda: read_overview(server.store, ci.webhook.workspace_id, "1h"),
            lambda data: data["totals"]["tool_calls"] == CALLS,
            what="the tool calls in the rollup's figures",
        )

        base = server.base_url
        tab = await browser.new_tab()
        await browser.run(tab.page.add_init_script, CSP_WATCH)

        def look() -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
            sign_in(tab, base, "alice", PASSWORD)
            page = tab.page
            expect(page).to_have_url(f"{base}/dashboard/w/acme/overview")
            expect(page.get_by_role("heading", level=1)).to_contain_text("Overview")
            _check_page(browser, tab, "overview")
            served_data = page.evaluate(
                "async () => (await fetch('/dashboard/w/acme/overview.json')).json()"
            )
            return page.evaluate(CHART_DATA), _figures(tab), served_data

        def look_again() -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
            tab.page.reload()
            expect(tab.page.get_by_role("heading", level=1)).to_contain_text("Overview")
            served_data = tab.page.evaluate(
                "async () => (await fetch('/dashboard/w/acme/overview.json')).json()"
            )
            return tab.page.evaluate(CHART_DATA), _figures(tab), served_data

        charts, figures, data = await browser.run(look)
        if charts["events_received"]["labels"] != data["labels"]:
            # A minute turned between drawing the page and fetching overview.json:
            # look again (a minute cannot turn twice in one look).
            charts, figures, data = await browser.run(look_again)
        # Every chart was drawn over the range's steps, as overview.json gives them.
        for series in CHARTS:
            assert charts[series] is not None, series
            assert charts[series]["labels"] == data["labels"], series
        assert len(data["labels"]) == 60
        received = _by_label(charts["events_received"])
        assert list(received) == ["ci", "deploys\\u202eyalp"]
        assert _sum(received["ci"]) == DONE + FAILED
        assert _sum(_by_label(charts["events_done"])["ci"]) == DONE
        assert _sum(_by_label(charts["events_failed"])["ci"]) == FAILED
        calls = _by_label(charts["tool_calls"])
        assert list(calls) == ["ran", "queued", "confirmed", "denied"]
        assert _sum(calls["ran"]) == CALLS
        assert _sum(calls["queued"]) == _sum(calls["denied"]) == 0
        latency = _by_label(charts["latency_ms"])
        assert list(latency) == ["p50", "p99"]
        # The events' step: the last one, or the one before when a minute turned
        # between the workload and the page (steps without a finished event are None).
        medians = [v for v in latency["p50"][-2:] if v is not None]
        assert medians and all(v > 0 for v in medians), latency["p50"][-2:]
        tokens = _by_label(charts["model_tokens"])
        assert _sum(tokens["input"]) > 0 and _sum(tokens["output"]) > 0
        # The figures say the same as the rollup.
        totals = data["totals"]
        assert totals["events_received"] == DONE + FAILED
        assert figures["events_received"] == str(DONE + FAILED)
        assert figures["events_done"] == str(DONE)
        assert figures["events_failed"] == str(FAILED)
        assert figures["tool_calls"] == str(CALLS)
        assert figures["refused"] == str(REFUSED)
        assert sum(_sum(values) for values in _by_label(charts["refused"]).values()) == REFUSED
        assert figures["latency_p50_ms"].endswith((" ms", " s"))

        # One more event: after a refresh of the data (no reload), it is counted.
        one_more = await deliver(ci, {"build": "late"})
        assert (await finished(server.store, one_more)).status is EventStatus.DONE

        def refreshed() -> dict[str, Any]:
            page = tab.page
            page.evaluate("() => { window.__notReloaded = true; }")
            page.evaluate("() => document.dispatchEvent(new Event('agentws:refresh'))")
            expect(page.locator("#total-events_received")).to_have_text(str(DONE + FAILED + 1))
            expect(page.locator("#total-events_done")).to_have_text(str(DONE + 1))
            page.wait_for_function(
                """(want) => Chart.getChart(document.getElementById("canvas-events_received"))
                     .data.datasets[0].data.reduce((a, b) => a + (b || 0), 0) === want""",
                arg=DONE + FAILED + 1,
            )
            assert page.evaluate("() => window.__notReloaded") is True
            # The table under the chart follows too.
            rows = page.locator("#table-events_done tbody tr")
            counted = sum(int(v) for v in rows.locator("td").all_text_contents())
            assert counted == DONE + 1
            assert page.evaluate("() => window.__cspViolations") == []
            tab.assert_clean("the refreshed overview")
            return page.evaluate(CHART_DATA)

        after = await browser.run(refreshed)
        assert _sum(_by_label(after["events_done"])["ci"]) == DONE + 1

        phone = await browser.new_tab(WIDTHS[1])
        await browser.run(phone.page.add_init_script, CSP_WATCH)

        def on_a_phone() -> None:
            sign_in(phone, base, "alice", PASSWORD)
            expect(phone.page).to_have_url(f"{base}/dashboard/w/acme/overview")
            _check_page(browser, phone, "overview")
            # The range switch is links; 7 days has a step an hour.
            phone.page.get_by_role("navigation", name="Range").get_by_role(
                "link", name="Last 7 days"
            ).click()
            expect(phone.page).to_have_url(f"{base}/dashboard/w/acme/overview?range=7d")
            expect(phone.page.locator("#total-events_received")).to_have_text(
                str(DONE + FAILED + 1)
            )
            assert len(phone.page.evaluate(CHART_DATA)["events_received"]["labels"]) == 168
            _check_page(browser, phone, "overview-7d")
            # The webhook's last event: its status, the time relative, the exact time on hover.
            when = phone.page.locator("#last-events time[data-ago]")
            expect(when).to_have_attribute(
                "title", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")
            )
            expect(when).to_have_text(re.compile(r"^\d+ (s|min) ago$"))

        await browser.run(on_a_phone)
