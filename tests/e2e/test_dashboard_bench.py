"""``scripts/bench dashboard`` at a tiny size: the seeding and the crawl, on a real agentws.

The benchmark's parts (scripts/benchlib/dashboard_seed.py and
dashboard_crawl.py, and bench_dashboard.py's measuring) run here against a
server on loopback with 400 events, 120 audit rows and a little of
everything else (connectors, documents, calls, a consent request), so a
change that breaks them (a renamed field, a page the crawl cannot reach, a
new GET route nothing times) fails here and not in the middle of a long
run. The figures themselves are not checked.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio
from cryptography.fernet import Fernet

from agentws.admins.accounts import create_admin
from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    AuditEntry,
    CachedTool,
    Connector,
    ConnectorKind,
    ContextDocument,
    Event,
    EventStatus,
    OAuthGrant,
    Webhook,
)
from agentws.oauth.settings import OAuthSettings
from agentws.settings.secret_box import SecretBox
from tests.e2e.mcp_support import running

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))

from bench_dashboard import NOT_PAGES, measure_site  # noqa: E402
from benchlib.dashboard_crawl import build_paths, get_routes, route_matcher  # noqa: E402
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
    "dashboard.approval",
    "dashboard.connector_show",
    "dashboard.document_page",
}
#: The routes no link leads to: timed at a URL built from what was seeded.
BUILT = {
    "dashboard.consent_page",
    "dashboard.login",
    "dashboard.overview_json",
    "dashboard.client_metadata_document",
    # Without an upstream's state: it says so and goes home.
    "dashboard.connector_authorized",
}


async def test_the_benchmark_seeds_a_week_and_times_every_page_it_finds(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=True) as server:
        store = server.store
        counts = await seed_dashboard(
            store,
            "acme",
            "ops",
            events=400,
            audit=120,
            webhooks=3,
            box=server.runtime.keys.optional() or SecretBox(Fernet(Fernet.generate_key())),
            oauth=OAuthSettings.from_settings(server.runtime.settings),
            approvals=30,
            documents=8,
            skills=3,
            tools=50,
        )
        values = counts.pop("values")
        assert counts == {
            "events": 400,
            "audit": 120,
            "webhooks": 3,
            "messages": counts["messages"],
            "groups": 5,  # ops and sales (the test's), platform, support, finance
            "connectors": 5,
            "tools": 50,
            "permissions": counts["permissions"],
            "documents": 8,
            "skills": 3,
            "approvals": 30,
            "decided": 6,
        }
        assert 0 < counts["messages"] <= 300
        assert counts["permissions"] >= 10
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
        # Connectors of every kind, secrets sealed; the remote one's tools cached.
        connectors = {c.name: c for c in await store.select(Connector)}
        assert {c.kind for c in connectors.values()} == set(ConnectorKind)
        assert all(c.secret is not None for c in connectors.values())
        remote = connectors[values["name"]]
        assert len(await store.select(CachedTool, connector_id=remote.id)) == 50
        # The largest document is 1 MiB; the calls pending and decided.
        documents = await store.select(ContextDocument)
        assert max(len(d.body.encode()) for d in documents) == 1024 * 1024
        approvals = await store.select(Approval)
        assert sum(a.status is ApprovalStatus.PENDING for a in approvals) == 30
        assert {ApprovalStatus.DENIED, ApprovalStatus.EXECUTED, ApprovalStatus.FAILED} <= {
            a.status for a in approvals
        }
        assert await store.find(OAuthGrant, id=values["grant_id"]) is not None
        await create_admin(store, "alice", password=PASSWORD, actor="t")

        site = await trio.to_thread.run_sync(
            lambda: measure_site(
                server.base_url, "alice", PASSWORD, depth=2, requests=1, values=values
            )
        )
        # Without a consent request to build its URL from, its route goes untimed: listed.
        less = {k: v for k, v in values.items() if k != "grant_id"}
        short = await trio.to_thread.run_sync(
            lambda: measure_site(
                server.base_url, "alice", PASSWORD, depth=0, requests=1, values=less
            )
        )
    assert short["untimed"] == ["dashboard.consent_page"]
    pages = site["pages"]
    routes = {p.endpoint for p in pages}
    assert routes >= MUST_REACH, MUST_REACH - routes
    assert {p.endpoint for p in pages if p.built} == BUILT
    assert len({p.route for p in pages}) == len(pages)  # one page of each route
    assert all(p.path.startswith("/dashboard/") for p in pages)
    assert not [p for p in pages if p.status >= 400], pages
    # Every GET route of the dashboard is timed, but the downloads, which are reported.
    assert site["untimed"] == []
    timed = {m["endpoint"] for m in site["measures"]}
    assert timed == set(get_routes()) - set(NOT_PAGES)
    assert sorted((n["route"].split("?")[0], n["status"]) for n in site["not_pages"]) == [
        ("dashboard.audit_export", 200),
        ("dashboard.event_body", 200),
    ]
    assert all(n["bytes"] > 0 for n in site["not_pages"])
    # The heaviest pages are timed, whether or not a link led to them.
    for endpoint, value in (
        ("dashboard.document_page", values["document"]),
        ("dashboard.approval", values["approval_id"]),
        ("dashboard.connector_show", values["name"]),
    ):
        paths = [m["path"] for m in site["measures"] if m["endpoint"] == endpoint]
        assert any(p.endswith("/" + value) for p in paths), (endpoint, paths)
    for m in site["measures"]:
        assert m["median_ms"] > 0 and m["max_ms"] >= m["median_ms"] and m["bytes"] > 0, m


def test_every_get_route_of_the_dashboard_is_known_and_built_from_values() -> None:
    routes = get_routes()
    assert BUILT | MUST_REACH | set(NOT_PAGES) <= set(routes)
    assert "dashboard.static" not in routes
    assert "dashboard.login_post" not in routes  # POST only
    # Without values only the routes without arguments can be built.
    assert set(build_paths({})) == {e for e, arguments in routes.items() if not arguments}
    built = build_paths({"workspace": "acme", "grant_id": "ogr_abc123def"})
    assert built["dashboard.consent_page"] == "/dashboard/oauth/consent/ogr_abc123def"
    assert built["dashboard.overview_json"] == "/dashboard/w/acme/overview.json"


def test_the_route_of_a_path_is_its_endpoint_and_query_names() -> None:
    route = route_matcher()
    assert route("/dashboard/events/evt_abc123def") == "dashboard.event"
    assert route("/dashboard/events/evt_zzz999yyy") == "dashboard.event"
    assert route("/dashboard/w/acme/events?cursor=x&webhook=y") == "dashboard.events?cursor&webhook"
    assert route("/dashboard/static/app.css") is None
    # A path the dashboard does not know keeps its shape, records made one.
    assert route("/dashboard/w/acme/nothing/evt_abc123def") == "/dashboard/w/acme/nothing/<id>"
