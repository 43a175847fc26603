"""Filtered pages of the audit log, on SQLite and PostgreSQL.

``audit_page`` reads newest first under any mix of filters (workspace, a
tool call's group, actor, OAuth client, tool, decision, action prefix,
time range) by keyset cursors that go both ways; the service's
:func:`agentws.common.audit.audit_page` names workspaces, groups and tokens as an
operator does, and :func:`agentws.common.audit.audit_entries` reads every page.
A page over 10,000 entries is timed (printed, not asserted).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

import attrs
import pytest

from agentws.common.audit import AuditFilters, audit_entries, audit_page
from agentws.core.errors import NotFoundError, ValidationError
from agentws.domain.approval_lists import Cursor
from agentws.domain.audit_lists import AuditQuery
from agentws.domain.models import AuditEntry, Group, McpToken, Workspace
from agentws.domain.permissions import Decision
from agentws.domain.rules import utcnow
from agentws.store import SqlStore


@attrs.frozen
class World:
    start: datetime
    ws: Workspace
    other: Workspace
    ops: Group
    dev: Group
    laptop: McpToken
    ci: McpToken
    entries: list[AuditEntry]  # oldest first


def _call(
    ws: Workspace, group: Group, token: McpToken, tool: str, decision: Decision, at: datetime
) -> AuditEntry:
    detail: dict[str, Any] = {"group_id": group.id, "decision": decision.value, "outcome": "ok"}
    if token.name == "ci":
        detail["oauth_client"] = "https://client.example/meta.json"
    return AuditEntry(
        workspace_id=ws.id,
        actor=f"mcp:{token.id}",
        action="tool.call",
        target=tool,
        detail=detail,
        created_at=at,
    )


async def world(store: SqlStore) -> World:
    start = utcnow() - timedelta(hours=2)
    ws = await store.insert(Workspace(slug="acme", name="Acme"))
    other = await store.insert(Workspace(slug="other", name="Other"))
    ops = await store.insert(Group(workspace_id=ws.id, slug="ops", name="Ops"))
    dev = await store.insert(Group(workspace_id=ws.id, slug="dev", name="Dev"))
    laptop = await store.insert(McpToken(group_id=ops.id, name="laptop", token_hash="h1", hint="1"))
    ci = await store.insert(McpToken(group_id=dev.id, name="ci", token_hash="h2", hint="2"))
    decisions = [Decision.RUN, Decision.DENY, Decision.QUEUE, Decision.RUN, Decision.CONFIRM]
    entries: list[AuditEntry] = []
    for n in range(30):
        at = start + timedelta(minutes=n)
        group, token = (ops, laptop) if n % 2 == 0 else (dev, ci)
        tool = "search" if n % 3 == 0 else "write_file"
        entries.append(_call(ws, group, token, tool, decisions[n % 5], at))
    # Entries of other kinds, between the calls.
    entries.append(
        AuditEntry(
            workspace_id=ws.id,
            actor="admin:alice",
            action="tool.label",
            target="write_file",
            created_at=start + timedelta(minutes=5, seconds=30),
        )
    )
    entries.append(
        AuditEntry(
            workspace_id=other.id,
            actor="admin:alice",
            action="token.create",
            target="other/x",
            created_at=start + timedelta(minutes=7, seconds=30),
        )
    )
    # Two entries at one instant: the id breaks the tie.
    tie = start + timedelta(minutes=40)
    entries += [
        AuditEntry(
            id="aud_a", actor="admin:bob", action="admin.create", target="c", created_at=tie
        ),
        AuditEntry(
            id="aud_b", actor="admin:bob", action="admin.create", target="d", created_at=tie
        ),
    ]
    entries.sort(key=lambda e: (e.created_at, e.id))
    await store.insert_many(list(reversed(entries)))
    return World(start, ws, other, ops, dev, laptop, ci, entries)


def newest(entries: list[AuditEntry], keep: Any = lambda e: True) -> list[AuditEntry]:
    return [e for e in reversed(entries) if keep(e)]


async def everything(store: SqlStore, query: AuditQuery) -> list[AuditEntry]:
    """Every page, following next_cursor."""
    found: list[AuditEntry] = []
    page = await store.audit_page(query)
    assert page.previous_cursor is None
    while True:
        found += page.items
        if page.next_cursor is None:
            return found
        page = await store.audit_page(attrs.evolve(query, cursor=Cursor.decode(page.next_cursor)))


async def test_pages_are_newest_first_and_go_both_ways(store: SqlStore) -> None:
    w = await world(store)
    expected = newest(w.entries)
    first = await store.audit_page(AuditQuery(limit=7))
    assert list(first.items) == expected[:7]
    assert first.previous_cursor is None and first.next_cursor is not None
    second = await store.audit_page(AuditQuery(limit=7, cursor=Cursor.decode(first.next_cursor)))
    assert list(second.items) == expected[7:14]
    assert second.previous_cursor is not None
    back = await store.audit_page(AuditQuery(limit=7, cursor=Cursor.decode(second.previous_cursor)))
    assert back.items == first.items
    assert back.previous_cursor is None and back.next_cursor == first.next_cursor
    assert await everything(store, AuditQuery(limit=5)) == expected
    # The two entries of one instant, newest (highest id) first.
    assert [e.id for e in expected[:2]] == ["aud_b", "aud_a"]


@pytest.mark.parametrize(
    "name",
    ["workspace", "group", "actor", "oauth", "tool", "decision", "action", "time", "mixed"],
)
async def test_each_filter(store: SqlStore, name: str) -> None:
    w = await world(store)
    since, until = w.start + timedelta(minutes=5), w.start + timedelta(minutes=12)
    cases: dict[str, tuple[AuditQuery, Any]] = {
        "workspace": (AuditQuery(workspace_id=w.ws.id), lambda e: e.workspace_id == w.ws.id),
        "group": (AuditQuery(group_id=w.dev.id), lambda e: e.detail.get("group_id") == w.dev.id),
        "actor": (AuditQuery(actor=f"mcp:{w.laptop.id}"), lambda e: e.actor.endswith(w.laptop.id)),
        "oauth": (
            AuditQuery(oauth_client="https://client.example/meta.json"),
            lambda e: "oauth_client" in e.detail,
        ),
        "tool": (AuditQuery(tool="write_file"), lambda e: e.target == "write_file"),
        "decision": (
            AuditQuery(decision=Decision.DENY),
            lambda e: e.detail.get("decision") == "deny",
        ),
        "action": (AuditQuery(action="tool."), lambda e: e.action.startswith("tool.")),
        "time": (
            AuditQuery(since=since, until=until),
            lambda e: since <= e.created_at < until,
        ),
        "mixed": (
            AuditQuery(
                workspace_id=w.ws.id,
                group_id=w.ops.id,
                tool="search",
                decision=Decision.RUN,
                action="tool.call",
            ),
            lambda e: (
                e.detail.get("group_id") == w.ops.id
                and e.target == "search"
                and e.detail.get("decision") == "run"
            ),
        ),
    }
    query, keep = cases[name]
    expected = newest(w.entries, keep)
    assert expected, "the world has entries for each filter"
    assert await everything(store, attrs.evolve(query, limit=3)) == expected
    assert await everything(store, attrs.evolve(query, limit=200)) == expected


async def test_nothing_matches(store: SqlStore) -> None:
    await world(store)
    page = await store.audit_page(AuditQuery(tool="no_such_tool"))
    assert page.items == () and page.next_cursor is None and page.previous_cursor is None


def test_a_query_refuses_what_it_cannot_mean() -> None:
    now = utcnow()
    with pytest.raises(ValidationError):
        AuditQuery(limit=0)
    with pytest.raises(ValidationError):
        AuditQuery(limit=201)
    with pytest.raises(ValidationError):
        AuditQuery(since=now, until=now)
    with pytest.raises(ValidationError):
        AuditQuery(since=datetime(2026, 1, 1))
    with pytest.raises(ValidationError):
        AuditQuery(tool="x" * 301)


async def test_the_service_names_things_as_an_operator_does(store: SqlStore) -> None:
    w = await world(store)
    by_name = await audit_page(
        store, AuditFilters(workspace="acme", group="ops", token="laptop"), limit=200
    )
    by_id = await audit_page(store, AuditFilters(token=w.laptop.id), limit=200)
    laptop = newest(w.entries, lambda e: e.actor == f"mcp:{w.laptop.id}")
    assert list(by_name.items) == list(by_id.items) == laptop
    with pytest.raises(NotFoundError):
        await audit_page(store, AuditFilters(workspace="nope"))
    with pytest.raises(NotFoundError):
        await audit_page(store, AuditFilters(workspace="acme", group="nope"))
    with pytest.raises(ValidationError):
        await audit_page(store, AuditFilters(group="ops"))
    with pytest.raises(ValidationError):
        await audit_page(store, AuditFilters(token=w.laptop.id, actor="admin:alice"))
    with pytest.raises(ValidationError):
        await audit_page(store, AuditFilters(), cursor="not-a-cursor")
    exported = [e async for e in await audit_entries(store, AuditFilters(action="tool.call"))]
    assert exported == newest(w.entries, lambda e: e.action == "tool.call")


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_a_page_of_ten_thousand_entries(store: SqlStore) -> None:
    w = await world(store)
    start = utcnow() - timedelta(days=7)
    tools = ["search", "write_file", "read_file", "delete_branch", "post_message"]
    decisions = list(Decision)
    bulk = [
        _call(
            w.ws,
            w.ops if n % 2 else w.dev,
            w.laptop if n % 2 else w.ci,
            tools[n % len(tools)],
            decisions[n % 7 % len(decisions)],
            start + timedelta(seconds=n * 60),
        )
        for n in range(10_000)
    ]
    await store.insert_many(bulk)
    queries = {
        "newest": AuditQuery(limit=50),
        "workspace+tool": AuditQuery(workspace_id=w.ws.id, tool="delete_branch", limit=50),
        "group+decision": AuditQuery(group_id=w.ops.id, decision=Decision.DENY, limit=200),
        "token": AuditQuery(actor=f"mcp:{w.laptop.id}", limit=50),
        "time": AuditQuery(since=start, until=start + timedelta(days=1), limit=200),
    }
    for name, query in queries.items():
        began = time.perf_counter()
        page = await store.audit_page(query)
        assert page.next_cursor is not None
        await store.audit_page(attrs.evolve(query, cursor=Cursor.decode(page.next_cursor)))
        took = (time.perf_counter() - began) / 2
        print(f"audit page over 10,000 entries, {name}: {took * 1000:.1f} ms")
