"""A workspace's and a webhook's newest events (``recent_events``), the same on both stores.

The query reads an index in order and stops at the limit (one webhook's
events are the newest of each status, merged): these check it still
answers what the plain query answered, newest first across statuses,
with ties broken by id, and only the workspace's own events.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentws.domain.models import Event, EventStatus, Webhook, Workspace
from agentws.store import SqlStore

T0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
STATUSES = list(EventStatus)


async def _hook(store: SqlStore, ws: Workspace, name: str) -> Webhook:
    return await store.insert(
        Webhook(workspace_id=ws.id, name=name, channel="local:ops", prompt="p", token_hash=name)
    )


def _event(hook: Webhook, n: int, status: EventStatus, *, same_second: bool = False) -> Event:
    when = T0 + timedelta(seconds=0 if same_second else n)
    return Event(
        id=f"evt_{n:04d}", webhook_id=hook.id, status=status, body=b"{}", received_at=when,
        available_at=when,
    )  # fmt: skip


async def test_newest_first_across_statuses_webhooks_and_workspaces(store: SqlStore) -> None:
    acme = await store.insert(Workspace(slug="acme", name="Acme"))
    other = await store.insert(Workspace(slug="other", name="Other"))
    a, b = await _hook(store, acme, "a"), await _hook(store, acme, "b")
    theirs = await _hook(store, other, "theirs")
    events = [
        _event(a if n % 3 else b, n, STATUSES[(n * 7) % len(STATUSES)]) for n in range(60)
    ] + [_event(theirs, 100 + n, EventStatus.DONE) for n in range(5)]
    await store.insert_many(events)
    ours = sorted(
        (e for e in events if e.webhook_id != theirs.id), key=lambda e: e.received_at, reverse=True
    )

    def ids(found: list[Event]) -> list[str]:
        return [e.id for e in found]

    assert ids(await store.recent_events(acme.id, limit=25)) == ids(ours[:25])
    assert ids(await store.recent_events(acme.id, limit=500)) == ids(ours)
    of_a = [e for e in ours if e.webhook_id == a.id]
    assert ids(await store.recent_events(acme.id, limit=7, webhook_id=a.id)) == ids(of_a[:7])
    assert ids(await store.recent_events(acme.id, limit=99, webhook_id=a.id)) == ids(of_a)
    failed_b = [e for e in ours if e.webhook_id == b.id and e.status is EventStatus.FAILED]
    found = await store.recent_events(acme.id, limit=3, webhook_id=b.id, status=EventStatus.FAILED)
    assert ids(found) == ids(failed_b[:3])
    queued = [e for e in ours if e.status is EventStatus.QUEUED]
    assert ids(await store.recent_events(acme.id, limit=4, status=EventStatus.QUEUED)) == ids(
        queued[:4]
    )
    # Another workspace's webhook is not this workspace's, even named by id.
    assert await store.recent_events(acme.id, limit=5, webhook_id=theirs.id) == []
    assert len(await store.recent_events(other.id, limit=50)) == 5


async def test_ties_in_time_are_broken_by_id_newest_first(store: SqlStore) -> None:
    acme = await store.insert(Workspace(slug="acme", name="Acme"))
    hook = await _hook(store, acme, "a")
    events = [_event(hook, n, STATUSES[n % len(STATUSES)], same_second=True) for n in range(12)]
    await store.insert_many(events)
    expected = sorted((e.id for e in events), reverse=True)
    assert [e.id for e in await store.recent_events(acme.id, limit=5)] == expected[:5]
    found = await store.recent_events(acme.id, limit=5, webhook_id=hook.id)
    assert [e.id for e in found] == expected[:5]
