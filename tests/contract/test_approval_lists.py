"""Lists of queued calls and the cap on queueing them, on SQLite and PostgreSQL.

A list is read a page at a time and never carries a call's whole arguments:
``approval_page`` gives summaries (the arguments' preview and size, the
token's and the webhook's names), by keyset cursors that go both ways and
stay put when rows before them are decided; statuses are as a person sees
them (a pending call past its time is expired). ``queue_approval`` stores a
call only while its requester has fewer than the cap waiting, also when
many queue at once. Migration 0014 gives calls queued before it a preview.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from typing import Any

import attrs
import pytest
import trio

from agentws.core.errors import ValidationError
from agentws.domain.approval_lists import DECIDED, ApprovalQuery, Cursor
from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    Capability,
    Group,
    McpToken,
    Webhook,
    Workspace,
    arguments_hash,
)
from agentws.domain.previews import PREVIEW_CHARS, json_bytes
from agentws.domain.rules import utcnow
from agentws.store import SqlStore, open_store
from agentws.store import migrations as migrations_module
from tests.contract.conftest import open_database

PENDING = frozenset({ApprovalStatus.PENDING})


@attrs.frozen
class World:
    now: datetime
    ws: Workspace
    other_ws: Workspace
    ops: Group
    foreign: Group
    token: McpToken
    webhook: Webhook


async def world(store: SqlStore, *, with_webhook: bool = True) -> World:
    now = utcnow()
    born = now - timedelta(days=1)
    ws = await store.insert(Workspace(slug="acme", name="Acme", created_at=born))
    other_ws = await store.insert(Workspace(slug="other", name="Other", created_at=born))
    ops = await store.insert(Group(workspace_id=ws.id, slug="ops", name="Ops", created_at=born))
    foreign = await store.insert(
        Group(workspace_id=other_ws.id, slug="foreign", name="Foreign", created_at=born)
    )
    token = await store.insert(
        McpToken(
            group_id=ops.id,
            name="laptop",
            token_hash=hashlib.sha256(b"secret").hexdigest(),
            hint="cret",
            created_at=born,
        )
    )
    webhook = Webhook(
        workspace_id=ws.id,
        name="ci",
        token_hash=hashlib.sha256(b"hook").hexdigest(),
        channel="local:ops",
        prompt="p",
        created_at=born,
    )
    if with_webhook:
        webhook = await store.insert(webhook)
    return World(now, ws, other_ws, ops, foreign, token, webhook)


def call(w: World, n: int, *, arguments: dict[str, Any] | None = None, **changes: Any) -> Approval:
    """The n-th call: created n seconds after ten minutes ago, asked by the token."""
    arguments = {"pr": n} if arguments is None else arguments
    fields: dict[str, Any] = {
        "group_id": w.ops.id,
        "token_id": w.token.id,
        "requested_by": f"mcp:{w.token.id}",
        "tool_name": "github_merge",
        "capability": Capability.WRITE,
        "definition_hash": "d" * 64,
        "arguments": arguments,
        "arguments_hash": arguments_hash("github_merge", arguments),
        "created_at": w.now - timedelta(minutes=10) + timedelta(seconds=n),
        "expires_at": w.now + timedelta(hours=1),
    }
    fields.update(changes)
    return Approval(**fields)


async def test_a_page_holds_previews_and_names_never_whole_arguments(store: SqlStore) -> None:
    w = await world(store)
    big = {"body": "é" * 100_000, "title": "release notes"}
    small = call(w, 1)
    large = call(w, 2, arguments=big)
    hooked = call(w, 3, token_id=None, requested_by=f"webhook:{w.webhook.id}")
    await store.insert_many([small, large, hooked])

    page = await store.approval_page(ApprovalQuery(), now=w.now)
    assert [a.id for a in page.items] == [small.id, large.id, hooked.id]
    first, second, third = page.items
    assert first.arguments_preview == json.dumps({"pr": 1})
    assert first.arguments_bytes == len(b'{"pr":1}')
    assert len(second.arguments_preview) == PREVIEW_CHARS
    assert second.arguments_preview.startswith('{"body": "ééé')
    assert second.arguments_preview.endswith("…")
    assert second.arguments_bytes == json_bytes(big) > 200_000  # é is two bytes
    assert (first.token_name, first.webhook_name, first.caller) == ("laptop", None, "token laptop")
    assert (third.token_name, third.webhook_name, third.caller) == (None, "ci", "webhook ci")
    assert (first.workspace_slug, first.group_slug) == ("acme", "ops")
    assert first.status is ApprovalStatus.PENDING
    assert page.next_cursor is None and page.previous_cursor is None
    # The whole arguments are still there, for the call's own page.
    assert (await store.get(Approval, large.id)).arguments == big


async def test_pages_follow_cursors_both_ways_and_stay_put(store: SqlStore) -> None:
    w = await world(store)
    calls = [call(w, n) for n in range(7)]
    await store.insert_many(calls)
    ids = [a.id for a in calls]

    async def page(cursor: str | None, **query: Any) -> Any:
        decoded = Cursor.decode(cursor) if cursor else None
        return await store.approval_page(ApprovalQuery(limit=3, cursor=decoded, **query), now=w.now)

    one = await page(None)
    assert [a.id for a in one.items] == ids[0:3] and one.previous_cursor is None
    two = await page(one.next_cursor)
    assert [a.id for a in two.items] == ids[3:6]
    three = await page(two.next_cursor)
    assert [a.id for a in three.items] == ids[6:] and three.next_cursor is None
    back = await page(three.previous_cursor)
    assert [a.id for a in back.items] == ids[3:6]
    assert back.next_cursor is not None and back.previous_cursor is not None
    front = await page(back.previous_cursor)
    assert [a.id for a in front.items] == ids[0:3] and front.previous_cursor is None

    # Deciding rows of the first page does not move the second.
    for approval in calls[:2]:
        await store.decide_approval(
            approval.id, status=ApprovalStatus.DENIED, decided_by="a", reason=None, now=w.now
        )
    again = await page(one.next_cursor, statuses=PENDING)
    assert [a.id for a in again.items] == ids[3:6]

    newest = await page(None, newest_first=True)
    assert [a.id for a in newest.items] == ids[6:3:-1]
    older = await page(newest.next_cursor, newest_first=True)
    assert [a.id for a in older.items] == ids[3:0:-1]
    newer = await page(older.previous_cursor, newest_first=True)
    assert [a.id for a in newer.items] == ids[6:3:-1] and newer.previous_cursor is None


async def test_statuses_and_workspaces_filter_as_a_person_sees_them(store: SqlStore) -> None:
    w = await world(store)
    waiting = call(w, 1)
    overdue = call(w, 2, expires_at=w.now - timedelta(seconds=1))  # stored pending
    denied = call(w, 3, status=ApprovalStatus.DENIED, decided_by="admin:a", decided_at=w.now)
    elsewhere = call(w, 4, group_id=w.foreign.id, token_id=None, requested_by="mcp:gone")
    await store.insert_many([waiting, overdue, denied, elsewhere])

    async def ids(**query: Any) -> list[str]:
        page = await store.approval_page(ApprovalQuery(**query), now=w.now)
        assert await store.count_approvals(ApprovalQuery(**query), now=w.now) == len(page.items)
        return [a.id for a in page.items]

    assert await ids(statuses=PENDING) == [waiting.id, elsewhere.id]
    assert await ids(statuses=frozenset({ApprovalStatus.EXPIRED})) == [overdue.id]
    assert await ids(statuses=DECIDED, newest_first=True) == [denied.id, overdue.id]
    assert await ids(statuses=frozenset({ApprovalStatus.DENIED})) == [denied.id]
    assert await ids(statuses=frozenset()) == []
    assert await ids(workspace_id=w.other_ws.id) == [elsewhere.id]
    assert await ids(statuses=PENDING, workspace_id=w.ws.id) == [waiting.id]
    page = await store.approval_page(ApprovalQuery(statuses=DECIDED), now=w.now)
    assert [a.status for a in page.items] == [ApprovalStatus.EXPIRED, ApprovalStatus.DENIED]
    # A caller whose token is gone is shown as the audit log names it.
    (gone,) = (
        await store.approval_page(ApprovalQuery(workspace_id=w.other_ws.id), now=w.now)
    ).items
    assert gone.caller == "mcp:gone"


async def test_the_cap_counts_each_requesters_waiting_calls(store: SqlStore) -> None:
    w = await world(store)
    overdue = call(w, 0, expires_at=w.now - timedelta(seconds=1))
    decided = call(w, 1, status=ApprovalStatus.DENIED)
    await store.insert_many([overdue, decided])
    assert await store.queue_approval(call(w, 2), max_pending=2, now=w.now)
    assert await store.queue_approval(call(w, 3), max_pending=2, now=w.now)
    refused = call(w, 4)
    assert not await store.queue_approval(refused, max_pending=2, now=w.now)
    assert await store.find(Approval, id=refused.id) is None
    # Another requester has its own count.
    hooked = call(w, 5, token_id=None, requested_by=f"webhook:{w.webhook.id}")
    assert await store.queue_approval(hooked, max_pending=2, now=w.now)


async def test_concurrent_queuers_cannot_pass_the_cap_together(store: SqlStore) -> None:
    w = await world(store)
    stored: list[bool] = []

    async def queue(n: int) -> None:
        stored.append(await store.queue_approval(call(w, n), max_pending=3, now=w.now))

    async with trio.open_nursery() as nursery:
        for n in range(8):
            nursery.start_soon(queue, n)
    assert sorted(stored) == [False] * 5 + [True] * 3
    assert await store.count(Approval) == 3


def test_a_cursor_is_one_a_page_gave_and_a_page_is_bounded() -> None:
    cursor = Cursor(utcnow(), "apr_abc", forward=False)
    assert Cursor.decode(cursor.encode()) == cursor
    for text in ("", "x1.apr", "n.apr", "n1.APR", "n1.apr;drop", "n" + "9" * 30 + ".a"):
        with pytest.raises(ValidationError, match="cursor"):
            Cursor.decode(text)
    for limit in (0, 201):
        with pytest.raises(ValidationError, match="limit must be 1 to 200"):
            ApprovalQuery(limit=limit)


async def test_calls_queued_before_the_migration_get_a_preview(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = [m for m in migrations_module.MIGRATIONS if m.version < 14]
    monkeypatch.setattr(migrations_module, "MIGRATIONS", tuple(before))
    async with open_store(database_url, pool_size=1) as old:
        # Only what the old schema has (a webhook has columns added since).
        w = await world(old, with_webhook=False)
    monkeypatch.undo()
    arguments = {"body": "x" * 1000}
    columns = (
        "id, group_id, token_id, requested_by, tool_name, capability, definition_hash,"
        " arguments, arguments_hash, status, created_at, expires_at"
    )
    async with open_database(database_url) as db, db.transaction() as tx:
        sqlite = db.dialect == "sqlite"
        await tx.execute(
            f"INSERT INTO approvals ({columns}) VALUES"
            " ($1, $2, $3, $4, 'github_merge', 'write', 'd', $5, 'h', 'pending', $6, $7)",
            "apr_old",
            w.ops.id,
            w.token.id,
            f"mcp:{w.token.id}",
            json.dumps(arguments, separators=(",", ":")),
            w.now.isoformat() if sqlite else w.now,
            (w.now + timedelta(hours=1)).isoformat() if sqlite else w.now + timedelta(hours=1),
        )
    async with open_store(database_url, pool_size=1) as store:
        (old_call,) = (await store.approval_page(ApprovalQuery(), now=w.now)).items
        assert old_call.arguments_preview.startswith('{"body":')
        assert old_call.arguments_preview.endswith("…")
        assert len(old_call.arguments_preview) == PREVIEW_CHARS
        assert old_call.arguments_bytes >= json_bytes(arguments)
        assert (await store.get(Approval, "apr_old")).arguments == arguments
