"""The Overview over HTTP: the home it is, the page without JavaScript, and overview.json.

A real agentws serves on loopback; httpx2 plays a browser without
JavaScript. The charts themselves, drawn and refreshed, are
``test_overview_browser.py``'s.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx2

from agentws.domain.models import EventStatus
from tests.e2e.mcp_support import running
from tests.e2e.run_support import deliver, finished, hook
from tests.e2e.test_dashboard import _browser, _signed_in

JSON_KEYS = {"range", "step_s", "from", "to", "labels", "series", "totals"}
STEPS = {"1h": (60, 60), "24h": (96, 900), "7d": (168, 3600)}


async def test_overview_json_needs_a_session_and_a_known_range(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=False) as server, _browser(server) as http:
        # Signed out: 401 in JSON (a script cannot follow the sign-in form's redirect).
        anonymous = await http.get("/dashboard/w/acme/overview.json")
        assert anonymous.status_code == 401
        assert anonymous.json()["error"]["code"] == "unauthorized"
        assert anonymous.headers["cache-control"] == "no-store"
        # The page itself sends to the sign-in form, and back.
        page = await http.get("/dashboard/w/acme/overview")
        assert page.status_code == 302
        assert page.headers["location"] == "/dashboard/login?next=/dashboard/w/acme/overview"

        await _signed_in(server, http)
        # A workspace where nothing happened yet says so, instead of nine empty charts.
        empty = (await http.get("/dashboard/w/acme/overview")).text
        assert '<div class="empty-state" id="overview-empty">' in empty
        assert "Nothing yet in the last hour." in empty
        assert '<div class="charts" hidden>' in empty
        for name, (points, step_s) in STEPS.items():
            answer = await http.get("/dashboard/w/acme/overview.json", params={"range": name})
            assert answer.status_code == 200, answer.text
            assert answer.headers["content-type"] == "application/json"
            data = answer.json()
            assert data.keys() >= JSON_KEYS
            assert (data["range"], data["step_s"], len(data["labels"])) == (name, step_s, points)
        default = (await http.get("/dashboard/w/acme/overview.json")).json()
        assert default["range"] == "1h"

        for bad in ("2h", "1H", "all"):
            refused = await http.get("/dashboard/w/acme/overview.json", params={"range": bad})
            assert refused.status_code == 400, bad
            error = refused.json()["error"]
            assert error["code"] == "invalid" and "1h, 24h, 7d" in error["message"]
            page = await http.get("/dashboard/w/acme/overview", params={"range": bad})
            assert page.status_code == 400 and "Unknown range" in page.text
        missing = await http.get("/dashboard/w/nope/overview.json")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "not_found"


async def test_the_overview_is_home_and_reads_without_javascript(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=False) as server, _browser(server) as http:
        ci = await hook(server, "ci")
        event_id = await deliver(ci, {"build": 1})
        done = await finished(server.store, event_id)
        assert done.status is EventStatus.DONE
        await hook(server, "quiet")
        await _signed_in(server, http)

        home = await http.get("/dashboard/")
        assert home.status_code == 302
        assert home.headers["location"] == "/dashboard/w/acme/overview"
        page = await http.get("/dashboard/w/acme/overview")
        assert page.status_code == 200
        text = page.text
        # First in the menu.
        nav = text.split('<nav aria-label="Sections">', 1)[1]
        assert nav.lstrip().startswith(
            '<span class="nav-group"><a href="/dashboard/w/acme/overview" aria-current="page">'
            "Overview</a>"
        )
        # The range switch: links, the current one marked.
        assert '<a href="/dashboard/w/acme/overview?range=1h" aria-current="page">' in text
        assert 'href="/dashboard/w/acme/overview?range=7d"' in text
        # The figures, as text.
        data = (await http.get("/dashboard/w/acme/overview.json")).json()
        received = data["totals"]["events_received"]
        assert received >= 1
        assert f'data-total="events_received" data-format="count">{received:,}</dd>' in text
        # Each chart: a named canvas, its table open (no script folds it), the scripts its own.
        for series in ("events_received", "latency_ms", "refused", "approvals", "sessions"):
            assert f'<canvas id="canvas-{series}" role="img" aria-label="Chart of ' in text
            assert f'<table id="table-{series}">' in text
        assert text.count("<details open>") == 9
        # Something happened: the charts, not the empty state.
        assert '<div class="empty-state" id="overview-empty" hidden>' in text
        assert '<div class="charts">' in text
        received_table = text.split('<table id="table-events_received">', 1)[1].split("</table>")[0]
        assert '<th scope="col">ci</th>' in received_table
        assert "Nothing in this range." not in received_table
        assert "/dashboard/static/vendor/chart.umd.min.js" in text
        assert "/dashboard/static/overview.js" in text
        # The page's data for its script, as JSON that is no script (the CSP is kept).
        config = re.search(
            r'<script type="application/json" id="overview-config">(.*?)</script>', text, re.S
        )
        assert config is not None
        parsed = json.loads(config.group(1))
        assert parsed["url"] == "/dashboard/w/acme/overview.json?range=1h"
        assert parsed["data"]["totals"]["events_received"] == received
        assert page.headers["content-security-policy"].startswith("default-src 'self'")
        assert "unsafe" not in page.headers["content-security-policy"]
        # Each webhook's last event: its status, when (relative), the exact time on hover.
        row = text.split('<table id="last-events">', 1)[1].split("</table>")[0]
        when = done.finished_at
        assert when is not None
        iso = when.isoformat(timespec="seconds").replace("+00:00", "Z")
        assert f'<time datetime="{iso}" title="{when:%Y-%m-%d %H:%M:%S} UTC" data-ago>' in row
        assert f'href="/dashboard/events/{event_id}"><span class="badge done">done</span>' in row
        assert "none yet" in row  # quiet has had no event

        # The library ships with its licence; scripts are served as scripts.
        for path in ("vendor/chart.umd.min.js", "overview.js"):
            served = await http.get(f"/dashboard/static/{path}")
            assert served.status_code == 200
            assert "javascript" in served.headers["content-type"]
        vendored = (await http.get("/dashboard/static/vendor/chart.umd.min.js")).text
        assert vendored.startswith("/*!\n * Chart.js v4.")
        licence = await http.get("/dashboard/static/vendor/chart.js.LICENSE.md")
        assert licence.status_code == 200 and "MIT License" in licence.text


async def test_overview_json_is_not_a_page_of_another_session(tmp_path: Path) -> None:
    # A cookie that names no session is no session.
    async with running(tmp_path, with_library=False) as server:
        async with httpx2.AsyncClient(
            base_url=server.base_url, cookies={"agentws_session": "forged"}, timeout=10
        ) as http:
            answer = await http.get("/dashboard/w/acme/overview.json")
        assert answer.status_code == 401
