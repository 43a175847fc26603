"""Bulk replay selection and queuing, the same on SQLite and PostgreSQL.

Candidates are a webhook's failed events matching the selection (time
range, error text in any case, with ``%`` and ``_`` taken literally) that
nothing replays yet, oldest first. Queuing copies body and headers, spaces
the replays as ordered, and queues each original once, even when two bulk
replays of the same events run at once on two connections.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import trio

from agentws.domain.models import Event, EventAttempt, EventStatus, Webhook, Workspace
from agentws.domain.replays import ReplayOrder, ReplaySelection
from agentws.domain.rules import new_id
from agentws.store import SqlStore, open_store

T0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
ALL = ReplaySelection()


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


async def make_webhook(store: SqlStore, name: str = "ci") -> Webhook:
    ws = await store.find(Workspace, slug="acme") or await store.insert(
        Workspace(slug="acme", name="Acme")
    )
    return await store.insert(
        Webhook(workspace_id=ws.id, name=name, channel="local:ops", prompt="p", token_hash=name)
    )


def stored(
    hook: Webhook, n: int, status: EventStatus, error: str | None = None, **fields: object
) -> Event:
    return Event(
        webhook_id=hook.id,
        body=b'{"n": %d}' % n,
        headers={"x-github-event": "push", "n": str(n)},
        status=status,
        error=error,
        received_at=at(n),
        available_at=at(n),
        **fields,  # type: ignore[arg-type]
    )


def orders(ids: list[str], start: float = 100.0) -> list[ReplayOrder]:
    return [
        ReplayOrder(
            original_id=i,
            event_id=new_id("evt"),
            prompt=None,
            available_at=at(start + n),
            received_at=at(start),
        )
        for n, i in enumerate(ids)
    ]


async def test_candidates_are_failed_events_never_replayed_matching_the_selection(
    store: SqlStore,
) -> None:
    hook, other = await make_webhook(store), await make_webhook(store, "other")
    events = [
        stored(hook, 1, EventStatus.FAILED, "model: invalid request (400)"),
        stored(hook, 2, EventStatus.DONE),
        stored(hook, 3, EventStatus.FAILED, "chat: channel_not_found"),
        stored(hook, 4, EventStatus.FAILED, "Model: 100% of_quota used"),
        stored(hook, 5, EventStatus.QUEUED),
        stored(other, 6, EventStatus.FAILED, "model: invalid request (400)"),
    ]
    replayed = stored(hook, 7, EventStatus.FAILED, "model: x")
    replay = stored(hook, 8, EventStatus.DONE, replay_of=replayed.id)
    await store.insert_many([*events, replayed, replay])

    async def ids(selection: ReplaySelection, limit: int = 100) -> list[str]:
        found = await store.replay_candidates(hook.id, selection, limit=limit)
        assert await store.count_replay_candidates(hook.id, selection) == len(
            await store.replay_candidates(hook.id, selection, limit=100)
        )
        return [c.id for c in found]

    one, _, three, four, *_ = (e.id for e in events)
    assert await ids(ALL) == [one, three, four]
    assert await ids(ALL, limit=2) == [one, three]
    assert await ids(ReplaySelection(since=at(3))) == [three, four]
    assert await ids(ReplaySelection(until=at(3))) == [one]
    assert await ids(ReplaySelection(since=at(2), until=at(4))) == [three]
    assert await ids(ReplaySelection(error_contains="MODEL")) == [one, four]
    assert await ids(ReplaySelection(error_contains="100%")) == [four]
    assert await ids(ReplaySelection(error_contains="100_")) == []
    assert await ids(ReplaySelection(error_contains="of_quota")) == [four]
    assert await ids(ReplaySelection(error_contains="%")) == [four]
    (first, *_) = await store.replay_candidates(hook.id, ALL, limit=1)
    assert (first.received_at, first.error, first.prompt) == (at(1), events[0].error, None)


async def test_queued_replays_copy_the_original_and_are_spaced_as_ordered(
    store: SqlStore,
) -> None:
    hook = await make_webhook(store)
    original = stored(hook, 1, EventStatus.FAILED, "x", dedup_key="github:d-1", attempts=4)
    await store.insert(original)
    (order,) = orders([original.id])
    order = ReplayOrder(order.original_id, order.event_id, "the old prompt", at(100), at(50))
    assert await store.queue_replays(hook.id, [order]) == [order.event_id]
    replay = await store.get(Event, order.event_id)
    assert (replay.body, replay.body_hash, replay.headers) == (
        original.body,
        original.body_hash,
        original.headers,
    )
    assert (replay.status, replay.attempts, replay.replay_of, replay.prompt) == (
        EventStatus.QUEUED,
        0,
        original.id,
        "the old prompt",
    )
    assert (replay.received_at, replay.available_at) == (at(50), at(100))
    assert (replay.dedup_key, replay.error, replay.lease_owner, replay.finished_at) == (
        None,
        None,
        None,
        None,
    )
    # Replayed once: no longer a candidate, and not queued again.
    assert await store.replay_candidates(hook.id, ALL, limit=10) == []
    assert await store.queue_replays(hook.id, orders([original.id])) == []


async def test_two_bulk_replays_at_once_queue_each_original_once(
    store: SqlStore, store_url: str
) -> None:
    hook = await make_webhook(store)
    failed = [stored(hook, n, EventStatus.FAILED, "x") for n in range(40)]
    await store.insert_many(failed)
    queued: list[list[str]] = []

    async def bulk(on: SqlStore) -> None:
        found = await on.replay_candidates(hook.id, ALL, limit=100)
        queued.append(await on.queue_replays(hook.id, orders([c.id for c in found])))

    async with open_store(store_url, pool_size=2) as other, trio.open_nursery() as nursery:
        for on in (store, other, store, other):
            nursery.start_soon(bulk, on)
    assert sum(len(ids) for ids in queued) == 40
    replays = [e for e in await store.select(Event) if e.replay_of is not None]
    assert sorted(e.replay_of for e in replays if e.replay_of) == sorted(e.id for e in failed)


async def test_the_prompts_events_last_ran_with(store: SqlStore) -> None:
    hook = await make_webhook(store)
    ran, never = stored(hook, 1, EventStatus.FAILED), stored(hook, 2, EventStatus.FAILED)
    await store.insert_many([ran, never])
    await store.insert_many(
        [
            EventAttempt(
                event_id=ran.id,
                number=n,
                instance_id="i",
                transcript={"prompt": prompt} if prompt else {},
                started_at=at(n),
            )
            for n, prompt in ((1, "first"), (2, "second"), (3, None))
        ]
    )
    assert await store.last_run_prompts([ran.id, never.id]) == {ran.id: "second"}
