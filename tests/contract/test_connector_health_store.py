"""What the connectors page reads for their health, on SQLite and PostgreSQL.

``connector_activity``: a workspace's tool calls and connector refreshes
since a time, newest first, at most ``limit`` (other workspaces, other
actions and older entries left out), with the fields of their detail that
health reads. ``connector_tool_summaries``: each connector's cached
tool count and newest fetch, for one workspace's connectors only. And
:func:`agentws.domain.connector_health.connector_health` over what they
return: calls, errors, median latency and the last error per connector.
"""

from __future__ import annotations

from datetime import timedelta

from agentws.domain.connector_health import connector_health
from agentws.domain.models import (
    AuditEntry,
    CachedTool,
    Connector,
    ConnectorKind,
    Workspace,
)
from agentws.domain.rules import utcnow
from agentws.store import SqlStore


def _call(ws: str, tool: str, minutes: float, **detail: object) -> AuditEntry:
    return AuditEntry(
        workspace_id=ws,
        actor="mcp:tok",
        action="tool.call",
        target=tool,
        detail={"outcome": "ran", **detail},
        created_at=utcnow() - timedelta(minutes=minutes),
    )


async def test_recent_audit_and_tool_summaries_feed_the_health(store: SqlStore) -> None:
    ws = await store.insert(Workspace(slug="acme", name="Acme"))
    other = await store.insert(Workspace(slug="other", name="Other"))
    gh = await store.insert(Connector(workspace_id=ws.id, name="gh", kind=ConnectorKind.GITHUB))
    # A name another connector's name starts with: calls go to the longest match.
    gh_two = await store.insert(
        Connector(workspace_id=ws.id, name="gh_two", kind=ConnectorKind.REMOTE_MCP)
    )
    elsewhere = await store.insert(
        Connector(workspace_id=other.id, name="gh", kind=ConnectorKind.GITHUB)
    )
    now = utcnow()
    for connector, names in ((gh, ("search", "merge")), (gh_two, ("x",)), (elsewhere, ("y",))):
        for n, name in enumerate(names):
            await store.insert(
                CachedTool(
                    connector_id=connector.id,
                    name=name,
                    definition_hash="d" * 64,
                    fetched_at=now - timedelta(minutes=10 - n),
                )
            )
    await store.insert_many(
        [
            _call(ws.id, "gh_search", 1, duration_ms=30, error=False),
            _call(ws.id, "gh_search", 2, duration_ms=10, error=False),
            _call(ws.id, "gh_merge", 3, duration_ms=50, error=True),
            _call(ws.id, "gh_two_x", 4, duration_ms=7, error=False),
            # Queued, not run: no call to count.
            AuditEntry(
                workspace_id=ws.id,
                actor="mcp:tok",
                action="tool.call",
                target="gh_merge",
                detail={"outcome": "queued"},
            ),
            # Too old, another workspace, another action: left out.
            _call(ws.id, "gh_search", 90, duration_ms=999, error=True),
            _call(other.id, "gh_y", 1, duration_ms=999, error=True),
            AuditEntry(workspace_id=ws.id, actor="admin:a", action="tool.label", target="gh_x"),
            AuditEntry(
                workspace_id=ws.id,
                actor="admin:a",
                action="connector.refresh",
                target="acme/gh_two",
                detail={"error": "connector 'gh_two': cannot connect"},
                created_at=now - timedelta(minutes=2.5),
            ),
        ]
    )
    since = now - timedelta(hours=1)
    entries = await store.connector_activity(ws.id, since=since, limit=100)
    assert [e.target for e in entries] == [
        "gh_merge",
        "gh_search",
        "gh_search",
        "acme/gh_two",
        "gh_merge",
        "gh_two_x",
    ]
    assert [(e.outcome, e.duration_ms, e.error) for e in entries] == [
        ("queued", None, None),
        ("ran", 30, False),
        ("ran", 10, False),
        (None, None, "connector 'gh_two': cannot connect"),
        ("ran", 50, True),
        ("ran", 7, False),
    ]
    newest = await store.connector_activity(ws.id, since=since, limit=2)
    assert [e.target for e in newest] == ["gh_merge", "gh_search"]

    summaries = await store.connector_tool_summaries(ws.id)
    assert set(summaries) == {gh.id, gh_two.id}
    count, newest_fetch = summaries[gh.id]
    assert count == 2 and newest_fetch is not None
    assert abs((newest_fetch - (now - timedelta(minutes=9))).total_seconds()) < 1

    health = connector_health([gh, gh_two], entries, summaries)
    assert (health[gh.id].calls, health[gh.id].errors, health[gh.id].p50_ms) == (3, 1, 30)
    assert health[gh.id].last_error == "gh_merge answered with an error"
    assert health[gh.id].error_rate == 1 / 3
    two = health[gh_two.id]
    assert (two.tools, two.calls, two.errors, two.p50_ms) == (1, 1, 0, 7)
    assert two.last_error == "refresh: connector 'gh_two': cannot connect"
