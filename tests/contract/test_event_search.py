"""Event lists and full-text search of events, the same on SQLite and PostgreSQL.

Filters (webhook, status, time received, words of the payload) combine;
pages are read from a keyset cursor, newest first, stable while events
arrive; the index is filled after the events are stored (never by the
door's commit) and forgets deleted events. The search's syntax (words,
phrases, prefixes, folding) is the module docstring of
:mod:`agentws.domain.event_text`; these tests hold both stores to it.
"""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
import trio

from agentws.core.errors import ValidationError
from agentws.domain.event_lists import Cursor, EventPage, EventQuery
from agentws.domain.event_text import MAX_SCANNED_BYTES, parse_search
from agentws.domain.form_bodies import form_event
from agentws.domain.models import Event, EventStatus, Webhook, Workspace
from agentws.store import SqlStore, open_store
from agentws.store.migrations import MIGRATIONS, migrate
from agentws.webhooks.event_index import BUSY_BATCH_EVENTS, EventIndexer, catch_up
from tests.contract.conftest import open_database
from tests.e2e.polling import wait_until

T0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
WINDOW_START = T0 - timedelta(hours=72)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


async def make_hooks(store: SqlStore, *names: str) -> tuple[Workspace, list[Webhook]]:
    ws = await store.insert(Workspace(slug="acme", name="Acme"))
    hooks = [
        await store.insert(
            Webhook(
                workspace_id=ws.id,
                name=name,
                channel="local:ops",
                prompt="p",
                token_hash=f"hash-{name}",
            )
        )
        for name in names
    ]
    return ws, hooks


async def deliver(
    store: SqlStore,
    hook: Webhook,
    n: float,
    payload: dict[str, Any] | bytes,
    headers: dict[str, str] | None = None,
) -> Event:
    """Store an event the door's way (the group commit), received at ``at(n)``."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    event = Event(
        webhook_id=hook.id,
        body=body,
        headers=headers or {"Content-Type": "application/json"},
        received_at=at(n),
        available_at=at(n),
    )
    (result,) = await store.ingest_events([event], dedup_since=WINDOW_START)
    assert result.event_id == event.id
    return event


async def page(store: SqlStore, ws: Workspace, **query: Any) -> EventPage:
    search = query.pop("search", None)
    return await store.event_page(
        EventQuery(workspace_id=ws.id, search=parse_search(search) if search else None, **query)
    )


async def found(store: SqlStore, ws: Workspace, search: str, **query: Any) -> list[str]:
    listed = await page(store, ws, search=search, limit=200, **query)
    return [e.id for e in listed.items]


async def test_the_door_commit_leaves_indexing_to_the_indexer(store: SqlStore) -> None:
    ws, (hook,) = await make_hooks(store, "ci")
    event = await deliver(store, hook, 1, {"action": "deployed", "service": "checkout"})
    assert await store.unindexed_events() == 1
    listed = await page(store, ws, search="checkout")
    # Not indexed yet: not found, and the page says so.
    assert (listed.items, listed.unindexed) == ((), 1)
    assert await catch_up(store) == 1
    assert await store.unindexed_events() == 0
    listed = await page(store, ws, search="checkout")
    assert ([e.id for e in listed.items], listed.unindexed) == ([event.id], 0)
    assert await catch_up(store) == 0


async def test_search_finds_an_event_by_a_word_of_its_payload(store: SqlStore) -> None:
    ws, (hook,) = await make_hooks(store, "ci")
    push = await deliver(
        store,
        hook,
        1,
        {
            "ref": "refs/heads/main",
            "head_commit": {"message": "Fix the checkout total", "id": "9f2c1e"},
            "pusher": {"name": "ann", "email": "ann@example.com"},
            "size": 3,
        },
        headers={"Content-Type": "application/json", "X-GitHub-Event": "push"},
    )
    other = await deliver(store, hook, 2, {"message": "refund issued", "amount": 129900})
    await catch_up(store)
    assert await found(store, ws, "checkout") == [push.id]
    assert await found(store, ws, "CHECKOUT Total") == [push.id]  # case, any order
    assert await found(store, ws, "refund") == [other.id]
    assert await found(store, ws, "129900") == [other.id]  # numbers are words too
    assert await found(store, ws, "push") == [push.id]  # header values are searched
    assert await found(store, ws, "9f2c1e") == [push.id]
    # Every part must match.
    assert await found(store, ws, "checkout refund") == []
    # Keys are not words of the event: every event of a sender has them.
    assert await found(store, ws, "pusher") == []
    assert await found(store, ws, "nothing-like-it") == []


async def test_phrases_prefixes_and_punctuation(store: SqlStore) -> None:
    ws, (hook,) = await make_hooks(store, "ci")
    failed = await deliver(
        store, hook, 1, {"status": "deploy failed", "by": "alice@example.com", "order": "A-1234"}
    )
    reversed_ = await deliver(store, hook, 2, {"status": "failed deploy", "by": "bob"})
    await catch_up(store)
    newest_first = [reversed_.id, failed.id]
    assert await found(store, ws, "deploy failed") == newest_first
    # A phrase: the words next to each other, in order.
    assert await found(store, ws, '"deploy failed"') == [failed.id]
    assert await found(store, ws, '"failed deploy"') == [reversed_.id]
    # Prefixes: a bare word, or the last word of a phrase.
    assert await found(store, ws, "depl*") == newest_first
    assert await found(store, ws, '"deploy fai"*') == [failed.id]
    assert await found(store, ws, "depl") == []
    # Text that folds to several words is a phrase of them: copied values find their event.
    assert await found(store, ws, "alice@example.com") == [failed.id]
    assert await found(store, ws, "a-1234") == [failed.id]
    assert await found(store, ws, "example.alice") == []
    # A phrase may run from one value into the next (values are read in order).
    assert await found(store, ws, '"failed alice"') == [failed.id]
    with pytest.raises(ValidationError, match="at least 2"):
        parse_search("d*")
    with pytest.raises(ValidationError, match="no word"):
        parse_search(' "" ** -- ')


async def test_unicode_in_json_and_form_bodies(store: SqlStore) -> None:
    ws, (hook,) = await make_hooks(store, "forms")
    escaped = await deliver(
        store, hook, 1, b'{"text": "Cr\\u00e8me br\\u00fbl\\u00e9e f\\u00fcr Zo\\u00eb"}'
    )
    raw = await deliver(store, hook, 2, '{"city": "東京都", "emoji": "🚀 ship it"}'.encode())
    # A Slack-style form: its payload field is the event (as the door stores it).
    form = urlencode({"payload": json.dumps({"user": "Łukasz", "action": "Genehmigt ✓"})})
    _, stored = form_event(form.encode())
    slack = await deliver(
        store, hook, 3, stored, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    await catch_up(store)
    assert await found(store, ws, "creme brulee") == [escaped.id]
    assert await found(store, ws, "Crème BRÛLÉE für zoë") == [escaped.id]
    assert await found(store, ws, "東京都") == [raw.id]
    assert await found(store, ws, "東京*") == [raw.id]
    assert await found(store, ws, "ship") == [raw.id]
    assert await found(store, ws, "lukasz genehmigt") == [slack.id]
    assert await found(store, ws, "Łukasz") == [slack.id]


async def test_filters_combine(store: SqlStore) -> None:
    ws, (ci, pay) = await make_hooks(store, "ci", "payments")
    other_ws = await store.insert(Workspace(slug="other", name="Other"))
    stranger = await store.insert(
        Webhook(
            workspace_id=other_ws.id,
            name="ci",
            channel="local:ops",
            prompt="p",
            token_hash="hash-stranger",
        )
    )
    events = {
        "ci-1": await deliver(store, ci, 10, {"msg": "build failed"}),
        "ci-2": await deliver(store, ci, 20, {"msg": "build passed"}),
        "pay-1": await deliver(store, pay, 30, {"msg": "payment failed"}),
        "ci-3": await deliver(store, ci, 40, {"msg": "build failed again"}),
    }
    await deliver(store, stranger, 50, {"msg": "build failed elsewhere"})
    owner = "worker-1"
    claimed = await store.claim_events(owner=owner, now=at(100), lease_expires_at=at(200), limit=10)
    assert {e.id for e in events.values()} <= {c.id for c in claimed}
    for c in claimed:
        failed = c.id in (events["ci-1"].id, events["pay-1"].id)
        await store.finish_event(
            c.id,
            owner=owner,
            status=EventStatus.FAILED if failed else EventStatus.QUEUED,
            now=at(100),
            available_at=at(1000),
        )
    await catch_up(store)

    async def ids(**query: Any) -> list[str]:
        listed = await page(store, ws, limit=200, **query)
        by_id = {e.id: n for n, e in events.items()}
        return [by_id[e.id] for e in listed.items]

    assert await ids() == ["ci-3", "pay-1", "ci-2", "ci-1"]  # this workspace's only
    assert await ids(webhook_id=ci.id) == ["ci-3", "ci-2", "ci-1"]
    assert await ids(status=EventStatus.FAILED) == ["pay-1", "ci-1"]
    assert await ids(webhook_id=ci.id, status=EventStatus.FAILED) == ["ci-1"]
    assert await ids(search="failed") == ["ci-3", "pay-1", "ci-1"]
    assert await ids(search="failed", webhook_id=ci.id) == ["ci-3", "ci-1"]
    assert await ids(search="failed", status=EventStatus.QUEUED) == ["ci-3"]
    # since is inclusive, until exclusive.
    assert await ids(since=at(20), until=at(40)) == ["pay-1", "ci-2"]
    assert await ids(since=at(20), until=at(40), search="failed") == ["pay-1"]
    assert await ids(since=at(41)) == []
    assert await ids(webhook_id=stranger.id) == []  # another workspace's webhook
    with pytest.raises(ValidationError, match="since must be before until"):
        EventQuery(workspace_id=ws.id, since=at(2), until=at(1))


async def test_pages_are_stable_and_complete_while_events_arrive(store: SqlStore) -> None:
    ws, (hook,) = await make_hooks(store, "ci")
    # Two events share a received_at: the id orders them, and a page ends between them.
    first = [await deliver(store, hook, n, {"word": "steady", "n": n}) for n in range(7)]
    twin = await deliver(store, hook, 4, {"word": "steady", "n": "twin"})
    await catch_up(store)
    late = itertools.count(100)
    by_key = sorted([*first, twin], key=lambda e: (e.received_at, e.id), reverse=True)
    for search in (None, "steady"):
        # What the list holds when paging begins (the second time round, with the late ones).
        expected = [e.id for e in (await page(store, ws, limit=200, search=search)).items]
        assert expected[-len(by_key) :] == [e.id for e in by_key]
        seen: list[str] = []
        pages: list[EventPage] = []
        cursor: Cursor | None = None
        while True:
            listed = await page(store, ws, limit=3, cursor=cursor, search=search)
            pages.append(listed)
            seen += [e.id for e in listed.items]
            # Newer events arrive between two pages: they come before the first page.
            await deliver(store, hook, next(late), {"word": "steady", "n": "late"})
            await catch_up(store)
            if listed.next_cursor is None:
                break
            cursor = Cursor.decode(listed.next_cursor)
        assert seen == expected
        if search is None:  # the first time round, the first page ends between the twins
            assert pages[0].items[-1].received_at == pages[1].items[0].received_at == at(4)
        assert [len(p.items) for p in pages] == [3] * (len(expected) // 3) + (
            [len(expected) % 3] if len(expected) % 3 else []
        )
        assert pages[0].previous_cursor is None
        # Back from the last page: the page before holds what it held.
        assert pages[-1].previous_cursor is not None
        back = await page(
            store, ws, limit=3, cursor=Cursor.decode(pages[-1].previous_cursor), search=search
        )
        assert back.items == pages[-2].items
        assert back.next_cursor is not None and back.previous_cursor is not None
        # Back from the first page: exactly the events that arrived since.
        assert pages[0].items
        newer = await page(
            store,
            ws,
            limit=50,
            cursor=Cursor(pages[0].items[0].received_at, pages[0].items[0].id, forward=False),
            search=search,
        )
        assert all(e.received_at > at(99) for e in newer.items)
        assert newer.previous_cursor is None and newer.next_cursor is not None


async def test_a_summary_has_no_body_but_its_size(store: SqlStore) -> None:
    ws, (hook,) = await make_hooks(store, "ci")
    event = await deliver(store, hook, 1, b'{"big": "' + b"x" * 5000 + b'"}')
    (summary,) = (await page(store, ws)).items
    assert (summary.id, summary.webhook_id, summary.status) == (
        event.id,
        hook.id,
        EventStatus.QUEUED,
    )
    assert summary.body_bytes == len(event.body)
    assert summary.received_at == event.received_at


async def test_only_the_start_of_a_big_body_is_indexed(store: SqlStore) -> None:
    ws, (hook,) = await make_hooks(store, "big")
    filler = " ".join(f"w{n}" for n in range(MAX_SCANNED_BYTES // 6))
    body = json.dumps({"a": "early", "filler": filler, "z": "late"}).encode()
    assert len(body) > MAX_SCANNED_BYTES
    event = await deliver(store, hook, 1, body)
    await catch_up(store)
    assert await found(store, ws, "early") == [event.id]
    assert await found(store, ws, "late") == []


async def test_a_deleted_event_leaves_the_index_and_its_rowid_can_be_used_again(
    store: SqlStore,
) -> None:
    ws, (keep, drop) = await make_hooks(store, "keep", "drop")
    kept = await deliver(store, keep, 1, {"word": "alpha"})
    dropped = await deliver(store, drop, 2, {"word": "alpha beta"})
    await catch_up(store)
    assert await found(store, ws, "alpha") == [dropped.id, kept.id]
    # The newest event goes with its webhook: on SQLite its rowid is free again.
    await store.delete(Webhook, drop.id)
    assert await found(store, ws, "alpha") == [kept.id]
    again = await deliver(store, keep, 3, {"word": "gamma"})
    assert await store.unindexed_events() == 1
    await catch_up(store)
    assert await found(store, ws, "gamma") == [again.id]
    assert await found(store, ws, "beta") == []


async def test_indexers_at_once_index_each_event_once(store: SqlStore) -> None:
    ws, (hook,) = await make_hooks(store, "ci")
    events = [await deliver(store, hook, n, {"word": "shared", "n": n}) for n in range(30)]
    replay = await store.insert(
        Event(webhook_id=hook.id, body=b'{"word": "shared replayed"}', received_at=at(99))
    )
    indexed: list[int] = []

    async def index() -> None:
        while added := await store.index_events(limit=4, max_bytes=1 << 20):
            indexed.append(added)

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(index)
    assert await store.unindexed_events() == 0
    hits = await found(store, ws, "shared")
    assert sorted(hits) == sorted([e.id for e in events] + [replay.id])
    assert await found(store, ws, "replayed") == [replay.id]


async def test_a_batch_reads_at_most_max_bytes_of_bodies(store: SqlStore) -> None:
    _, (hook,) = await make_hooks(store, "ci")
    for n in range(5):
        await deliver(store, hook, n, {"pad": "x" * 1000, "n": n})
    # One event whatever its size, then as many as fit.
    assert await store.index_events(limit=10, max_bytes=10) == 1
    assert await store.index_events(limit=10, max_bytes=2100) == 2
    assert await store.index_events(limit=10, max_bytes=1 << 20) == 2
    assert await store.index_events(limit=10, max_bytes=1 << 20) == 0


async def test_the_indexer_yields_to_a_busy_door_and_drains_an_idle_one(store: SqlStore) -> None:
    _, (hook,) = await make_hooks(store, "ci")
    total = BUSY_BATCH_EVENTS * 3
    events = [
        Event(webhook_id=hook.id, body=b'{"n": %d}' % n, received_at=at(n), available_at=at(n))
        for n in range(total)
    ]
    await store.ingest_events(events, dedup_since=WINDOW_START)  # one commit

    async def indexer_until(busy: bool, left: int) -> None:
        # A pause longer than the test: only the first round can run.
        indexer = EventIndexer(store, door_busy=lambda: busy, poll_s=3600, busy_pause_s=3600)
        async with trio.open_nursery() as nursery:
            await nursery.start(indexer.serve)
            await wait_until(store.unindexed_events, lambda n: n <= left, what=f"{left} left")
            indexer.close()  # ends its pause at once
        assert await store.unindexed_events() == left

    # Deliveries queueing: one small batch, then a pause.
    await indexer_until(busy=True, left=total - BUSY_BATCH_EVENTS)
    # An idle door: batch after batch until none is left.
    await indexer_until(busy=False, left=0)


async def test_events_stored_before_the_migration_are_indexed(database_url: str) -> None:
    (search_migration,) = [m for m in MIGRATIONS if m.name == "event_search"]
    # Every migration but the search's: the door's insert writes columns added after it.
    before = [m for m in MIGRATIONS if m.version != search_migration.version]
    async with open_database(database_url) as db:
        async with db.transaction() as tx:
            ts = "TEXT" if db.dialect == "sqlite" else "TIMESTAMPTZ"
            await tx.execute(
                "CREATE TABLE schema_migrations ("
                f" version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at {ts} NOT NULL)"
            )
            for migration in before:
                for statement in migration.statements(db.dialect):
                    await tx.execute(statement)
                await tx.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                    migration.version,
                    migration.name,
                    T0.isoformat() if db.dialect == "sqlite" else T0,
                )
        # The door's insert is the same on the old schema.
        ws, (hook,) = await make_hooks(SqlStore(db), "ci")
        old = await deliver(SqlStore(db), hook, 1, {"note": "stored before search existed"})
        assert await migrate(db) == [m.version for m in MIGRATIONS if m not in before]
    async with open_store(database_url) as store:
        assert await store.unindexed_events() == 1
        await catch_up(store)
        assert await found(store, ws, "search existed") == [old.id]
