"""A known workload through the real doors, rolled up by the service, charted in Chromium.

A real agentws serves on loopback with its model at a fake Messages API
(it fails the events that ask for it; the others cost known tokens) and a
real third-party MCP server as the group's connector. The test sends
webhook events of which some fail (the real worker runs them), a
redelivery (a duplicate: logged, never refused), deliveries refused for
known reasons, and tool calls over MCP that the gate runs, queues, runs
after a confirmation and denies, from sessions over both transports that
stay open. Then the service's own rollup samples its gauges and rolls
every minute up (``tests/e2e/rollup_support.roll_now``), so the figures
are read from rolled buckets, not from the sources.

Checked: the exact figures of every series (``read_overview`` on every
range, and ``overview.json``), the same step by step as before the roll;
and, in Chromium, that every chart of the Overview was given exactly the
series of the data it drew (``Chart.getChart(canvas).data``): the page's
first data, then the ``overview.json`` answer of a refresh.
"""

from __future__ import annotations

from collections import defaultdict
from contextlib import AsyncExitStack
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp.shared.exceptions import MCPError
from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.domain.models import Capability, EventStatus, VerificationScheme
from agentws.domain.rollups import MINUTE
from agentws.domain.rules import utcnow
from agentws.doors.dashboard.overview import CHARTS, TOTALS, format_total
from agentws.rollups import read_overview
from agentws.service import _session_transports
from agentws.workspaces.admin import create_token
from tests.e2e.browser_support import Tab, fits, open_browser, sign_in
from tests.e2e.mcp_support import Running, sdk_session
from tests.e2e.polling import wait_until
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, TIMEOUT_S
from tests.e2e.rollup_support import roll_now
from tests.e2e.run_support import deliver, finished, hook
from tests.e2e.test_overview_browser import CHART_DATA, CSP_WATCH, PASSWORD
from tests.e2e.test_overview_figures import (
    INPUT_PER_TURN,
    OUTPUT_PER_TURN,
    SECRET,
    _accept,
    served,
)
from tests.e2e.webhook_support import assert_error, post

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

FAIL = {"outcome": "please-fail"}
# N events, M of them failing, per webhook.
RECEIVED = {"alerts": 1, "deploys": 4, "guarded": 0}
DONE = {"alerts": 0, "deploys": 3, "guarded": 0}
FAILED = {"alerts": 1, "deploys": 1, "guarded": 0}
# R refusals, by reason (the redelivery is a duplicate, not one of them).
REFUSED = {"invalid_json": 1, "invalid_signature": 2}
# K tool calls, by decision.
DECISIONS = {"ran": 2, "queued": 1, "confirmed": 1, "denied": 1}
TOKENS = {
    "input": sum(DONE.values()) * INPUT_PER_TURN,
    "output": sum(DONE.values()) * OUTPUT_PER_TURN,
}
SESSIONS = {"sse": 1, "streamable": 2}
# The series counted (the others are gauges and percentiles).
COUNTERS = ("events_received", "events_done", "events_failed", "refused", "tool_calls")


async def _events(server: Running) -> None:
    """The webhook events: done and failed ones, and a redelivery of one of them."""
    deploys, alerts = await hook(server, "deploys"), await hook(server, "alerts")
    sent = [await deliver(deploys, {"build": n}) for n in range(2)]
    sent += [await deliver(deploys, {**FAIL, "n": 1}), await deliver(alerts, {**FAIL, "n": 2})]
    once = await post(deploys.url, b'{"build": "once"}', {"Idempotency-Key": "build-once"})
    assert once.status_code == 202, once.text
    again = await post(deploys.url, b'{"build": "once"}', {"Idempotency-Key": "build-once"})
    assert (again.status_code, again.json()["status"]) == (200, "duplicate"), again.text
    sent.append(once.json()["event_id"])
    statuses = [(await finished(server.store, event_id)).status for event_id in sent]
    assert statuses == [EventStatus.DONE] * 2 + [EventStatus.FAILED] * 2 + [EventStatus.DONE]
    # Refused: a body that is not JSON, and a wrong secret twice.
    refused = await post(deploys.url, b"{not json")
    assert_error(refused, 400, "invalid_json")
    guarded = await hook(
        server, "guarded", verification=VerificationScheme.SHARED_SECRET, secret=SECRET
    )
    for n in range(2):
        wrong = await post(guarded.url, b'{"n": %d}' % n, {"X-Webhook-Secret": "wrong"})
        assert_error(wrong, 401, "invalid_signature")


def _sums(series: dict[str, list[Any]]) -> dict[str, Any]:
    return {key: sum(v for v in values if v is not None) for key, values in series.items()}


def _check_figures(answer: dict[str, Any]) -> None:
    """The workload's figures, exactly, in a 1h answer (``read_overview`` or overview.json)."""
    series, totals = answer["series"], answer["totals"]
    assert len(answer["labels"]) == 60
    assert all(len(values) == 60 for part in series.values() for values in part.values())
    assert _sums(series["events_received"]) == RECEIVED
    assert _sums(series["events_done"]) == DONE
    assert _sums(series["events_failed"]) == FAILED
    assert _sums(series["refused"]) == REFUSED
    assert _sums(series["tool_calls"]) == DECISIONS
    assert _sums(series["model_tokens"]) == TOKENS
    # Latency: a point where done events finished, and only there.
    p50s, p99s = series["latency_ms"]["p50"], series["latency_ms"]["p99"]
    done = [i for i in range(60) if any(v[i] for v in series["events_done"].values())]
    assert done and [i for i, v in enumerate(p50s) if v is not None] == done
    assert all(0 < p50s[i] <= p99s[i] for i in done)
    # The gauges: now in the last point; never sampled before the service ran.
    depth, oldest = series["approvals"]["depth"], series["approvals"]["oldest_s"]
    assert depth[-1] == 1
    assert oldest[-1] is not None and oldest[-1] > 0
    for transport, count in SESSIONS.items():
        values = series["sessions"][transport]
        assert values[-1] == count
        assert [v is None for v in values] == [d is None for d in depth], transport
    assert totals == {
        "events_received": sum(RECEIVED.values()),
        "events_done": sum(DONE.values()),
        "events_failed": sum(FAILED.values()),
        "refused": sum(REFUSED.values()),
        "tool_calls": sum(DECISIONS.values()),
        "model_tokens": sum(TOKENS.values()),
        "latency_p50_ms": totals["latency_p50_ms"],
        "latency_p99_ms": totals["latency_p99_ms"],
        "approvals_depth": 1,
        "sessions": sum(SESSIONS.values()),
    }
    p50, p99 = totals["latency_p50_ms"], totals["latency_p99_ms"]
    assert p50 is not None and p99 is not None and 0 < p50 <= p99 < 10_000


def _expected_charts(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What each chart is to be given from ``data``: as doors/dashboard/overview.py orders and
    names a chart's keys (fixed ones first, the others sorted; no name here needs escaping)."""
    expected = {}
    for spec in CHARTS:
        series = data["series"][spec.series]
        keys = list(spec.names) + sorted(k for k in series if k not in spec.names)
        expected[spec.series] = {
            "type": spec.kind,
            "labels": data["labels"],
            "datasets": [{"label": spec.names.get(k, k), "data": series[k]} for k in keys],
        }
    return expected


def _check_charts(charts: dict[str, Any], data: dict[str, Any], where: str) -> None:
    """Every chart was given ``data``'s series, step by step."""
    assert set(charts) == {spec.series for spec in CHARTS}, where
    for name, want in _expected_charts(data).items():
        got = charts[name]
        assert got is not None, f"{where}: {name} not drawn"
        assert got["type"] == want["type"], (where, name)
        assert got["labels"] == want["labels"], (where, name)
        assert [d["label"] for d in got["datasets"]] == [d["label"] for d in want["datasets"]], (
            where,
            name,
        )
        for have, wanted in zip(got["datasets"], want["datasets"], strict=True):
            assert len(have["data"]) == len(wanted["data"]) == 60, (where, name)
            for step, (a, b) in enumerate(zip(have["data"], wanted["data"], strict=True)):
                assert a == b, f"{where}: {name} {have['label']} step {step}: {a!r} != {b!r}"


def _figures_written(tab: Tab) -> dict[str, str]:
    figures: dict[str, str] = tab.page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll("[data-total]")]
             .map((node) => [node.dataset.total, node.textContent]))"""
    )
    return figures


async def test_a_known_workload_is_rolled_up_and_charted_exactly(tmp_path: Path) -> None:
    async with served(tmp_path) as (server, state), open_browser("overview-workload") as browser:
        store = server.store
        await create_admin(store, "alice", password=PASSWORD, actor="t")
        workspace = await store.workspace_by_slug("acme")
        await _events(server)
        lead = await create_token(
            store, "acme", "ops", name="lead", scope=Capability.DESTRUCTIVE, actor="t"
        )
        reader = await create_token(
            store, "acme", "ops", name="reader", scope=Capability.READ, actor="t"
        )
        async with AsyncExitStack() as sessions:
            # The sessions stay open until the end: the figures say they are.
            confirming = await sessions.enter_async_context(
                sdk_session(server, "streamable", token=lead.secret, elicitation_callback=_accept)
            )
            reading = await sessions.enter_async_context(
                sdk_session(server, "sse", token=reader.secret)
            )
            idle = await sessions.enter_async_context(sdk_session(server, "streamable"))
            await idle.list_tools()
            with trio.fail_after(TIMEOUT_S):
                for q in ("a", "b"):
                    assert not (await confirming.call_tool("third_search", {"q": q})).is_error
                queued = await confirming.call_tool("third_send", {"q": "c"})
                assert (queued.structured_content or {})["status"] == "queued", queued
                assert not (await confirming.call_tool("third_drop", {"q": "d"})).is_error
                with pytest.raises(MCPError):
                    await reading.call_tool("third_send", {"q": "e"})
            assert state.calls == ["search", "search", "drop"]
            assert sorted(t for _, t in _session_transports(server.runtime.sessions)) == [
                "sse",
                "streamable",
                "streamable",
            ]

            # Counted at the source first (the refusals' rows are written by the
            # delivery log in the background: waited for).
            before = await wait_until(
                lambda: read_overview(store, workspace.id, "1h"),
                lambda a: a["totals"]["refused"] >= 3 and a["totals"]["tool_calls"] >= 5,
                timeout_s=10,
                what="the refusals and the tool calls to be stored",
            )
            # The service's own rollup: this minute's gauges, then every minute rolled.
            await server.runtime.rollup.sample(utcnow())
            mark = await roll_now(server.runtime)
            answer = await read_overview(store, workspace.id, "1h")
            # Read from the buckets: the mark is past the read's minute (nothing left to
            # count at the source), and the buckets hold the events.
            assert mark.minute >= int(utcnow().timestamp()) // 60
            first_minute = int(datetime.fromisoformat(answer["labels"][0]).timestamp()) // 60
            rolled: defaultdict[str, float] = defaultdict(float)
            for _, series, _, value in await store.rollup_steps(
                workspace.id,
                span_m=MINUTE,
                start_minute=first_minute,
                end_minute=mark.minute,
                origin_minute=first_minute,
                step_m=1,
            ):
                rolled[series] += value
            assert {s: rolled[s] for s in ("received", "done", "failed", "refused")} == {
                "received": 5,
                "done": 3,
                "failed": 2,
                "refused": 3,
            }
            assert (rolled["tool_calls"], rolled["tokens"]) == (5, sum(TOKENS.values()))
            _check_figures(answer)
            # The same, step by step, as counted at the source before the roll.
            for name in (*COUNTERS, "model_tokens", "latency_ms"):
                assert answer["series"][name] == before["series"][name], name
            for name in ("24h", "7d"):
                wide = await read_overview(store, workspace.id, name)
                assert wide["totals"] == answer["totals"], name
                for series in (*COUNTERS, "model_tokens"):
                    assert _sums(wide["series"][series]) == _sums(answer["series"][series])

            base = server.base_url
            tab = await browser.new_tab()
            await browser.run(tab.page.add_init_script, CSP_WATCH)

            def look() -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
                sign_in(tab, base, "alice", PASSWORD)
                page = tab.page
                expect(page).to_have_url(f"{base}/dashboard/w/acme/overview")
                # The data the page drew first (rendered into it by the server).
                first = page.evaluate(
                    "() => JSON.parse(document.getElementById('overview-config').textContent).data"
                )
                return page.evaluate(CHART_DATA), first, _figures_written(tab)

            charts, first, figures = await browser.run(look)
            _check_figures(first)
            _check_charts(charts, first, "first draw")
            for key, _, how in TOTALS:
                assert figures[key] == format_total(first["totals"][key], how), key

            def refreshed() -> tuple[dict[str, Any], dict[str, Any]]:
                page = tab.page
                with page.expect_response(lambda r: "/overview.json" in r.url) as response:
                    page.evaluate("() => document.dispatchEvent(new Event('agentws:refresh'))")
                served_data: dict[str, Any] = response.value.json()
                page.wait_for_function(
                    "() => document.getElementById('overview').dataset.refreshes === '1'"
                )
                for spec in CHARTS:
                    expect(page.locator(f"#canvas-{spec.series}")).to_be_visible()
                ok, measures = fits(tab)
                assert ok, measures
                browser.screenshot(tab, "overview")
                assert page.evaluate("() => window.__cspViolations") == []
                tab.assert_clean("the overview of a known workload")
                return page.evaluate(CHART_DATA), served_data

            charts, data = await browser.run(refreshed)
            _check_figures(data)
            _check_charts(charts, data, "overview.json")
