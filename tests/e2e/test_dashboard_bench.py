"""``scripts/bench dashboard`` at a tiny size: the seeding and the crawl, on a real agentws.

The benchmark's parts (scripts/benchlib/dashboard_seed.py and
dashboard_crawl.py, and bench_dashboard.py's measuring) run here against a
server on loopback with 400 events and 120 audit rows, so a change that
breaks them (a renamed field, a page the crawl cannot reach) fails here and
not in the middle of a long run. The figures themselves are not checked.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

from agentws.accounts import create_admin
from agentws.domain.models import AuditEntry, Event, EventStatus, Webhook
from tests.e2e.mcp_support import running

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))

from bench_dashboard import measure_site  # noqa: E402
from benchlib.dashboard_crawl import route_matcher  # noqa: E402
from benchlib.dashboard_seed import seed_dashboard  # noqa: E402

PASSWORD = "correct horse battery staple"
#: The routes every crawl must reach: the home page's redirect and what the menu links to.
MUST_REACH = {
    "dashboard.home",
    "dashboard.webhooks",
    "dashboard.webhook_show",
    "dashboard.webhook_deliveries",
    "dashboard.endpoints",
    "dashboard.permissions",
    "dashboard.approvals",
    "dashboard.events",
    "dashboard.event",
    "dashboard.libraries_page",
    "dashboard.channels",
}


async def test_the_benchmark_seeds_a_week_and_times_every_page_it_finds(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=True) as server:
        store = server.store
        counts = await seed_dashboard(store, "acme", "ops", events=400, audit=120, webhooks=3)
        assert counts == {
            "events": 400,
            "audit": 120,
            "webhooks": 3,
            "messages": counts["messages"],
        }
        assert 0 < counts["messages"] <= 300
        hooks = await store.select(Webhook)
        assert len(hooks) == 3
        events = await store.select(Event)
        assert len(events) == 400
        statuses = {e.status for e in events}
        assert {EventStatus.DONE, EventStatus.FAILED} <= statuses
        span = max(e.received_at for e in events) - min(e.received_at for e in events)
        assert span.days >= 5  # spread over the week
        calls = [a for a in await store.select(AuditEntry) if a.action == "tool.call"]
        assert len(calls) == 120
        assert {"run", "queue", "deny"} <= {c.detail["decision"] for c in calls}
        # The seeded events are searchable: the index is filled.
        assert await store.index_events(limit=10, max_bytes=1 << 20) == 0
        await create_admin(store, "alice", password=PASSWORD, actor="t")

        pages, measures = await trio.to_thread.run_sync(
            lambda: measure_site(server.base_url, "alice", PASSWORD, depth=2, requests=1)
        )
    routes = {p.route.split("?")[0] for p in pages}
    assert routes >= MUST_REACH, MUST_REACH - routes
    assert len({p.route for p in pages}) == len(pages)  # one page of each route
    assert all(p.path.startswith("/dashboard/") for p in pages)
    assert not [p for p in pages if p.status >= 400], pages
    timed = {m["route"] for m in measures}
    assert "dashboard.events" in timed and "dashboard.home" in timed
    for m in measures:
        assert m["median_ms"] > 0 and m["max_ms"] >= m["median_ms"] and m["bytes"] > 0, m


def test_the_route_of_a_path_is_its_endpoint_and_query_names() -> None:
    route = route_matcher()
    assert route("/dashboard/events/evt_abc123def") == "dashboard.event"
    assert route("/dashboard/events/evt_zzz999yyy") == "dashboard.event"
    assert route("/dashboard/w/acme/events?cursor=x&webhook=y") == "dashboard.events?cursor&webhook"
    assert route("/dashboard/static/app.css") is None
    # A path the dashboard does not know keeps its shape, records made one.
    assert route("/dashboard/w/acme/nothing/evt_abc123def") == "/dashboard/w/acme/nothing/<id>"
