"""The event queue and channel queries, the same on SQLite and PostgreSQL.

Ingest (dedup in the same transaction, the 72 h window, vanished and draft
webhooks), claims (leases, per-webhook concurrency, strict order, fairness,
expired leases), finishing under a lease (attempts recorded by the lease's
holder only), and the listing queries.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import trio

from agentws.domain.deliveries import IngestOutcome
from agentws.domain.models import (
    ChatMessage,
    Event,
    EventAttempt,
    EventStatus,
    Webhook,
    Workspace,
)
from agentws.store import SqlStore

T0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
WINDOW_START = T0 - timedelta(hours=72)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


async def make_webhooks(store: SqlStore, *concurrency: int) -> tuple[Workspace, list[Webhook]]:
    ws = await store.insert(Workspace(slug="acme", name="Acme"))
    hooks = [
        await store.insert(
            Webhook(
                workspace_id=ws.id,
                name=f"hook-{i}",
                channel="local:ops",
                prompt="p",
                token_hash=f"hash-{i}",
                concurrency=c,
            )
        )
        for i, c in enumerate(concurrency)
    ]
    return ws, hooks


def event(hook: Webhook, n: int, *, key: str | None = None, body: bytes | None = None) -> Event:
    return Event(
        webhook_id=hook.id,
        body=body if body is not None else b'{"n": %d}' % n,
        dedup_key=key,
        received_at=at(n),
        available_at=at(n),
    )


async def ingest(store: SqlStore, *events: Event) -> list[tuple[IngestOutcome, str | None]]:
    results = await store.ingest_events(list(events), dedup_since=WINDOW_START)
    return [(r.outcome, r.event_id) for r in results]


async def claim(store: SqlStore, owner: str, now: float, limit: int = 10) -> list[Event]:
    return await store.claim_events(
        owner=owner, now=at(now), lease_expires_at=at(now + 30), limit=limit
    )


async def test_ingest_stores_new_events_and_answers_redeliveries(store: SqlStore) -> None:
    _, (hook,) = await make_webhooks(store, 4)
    first = event(hook, 1, key="github:d-1")
    again = event(hook, 2, key="github:d-1", body=first.body)
    other_body = event(hook, 3, key="github:d-1")
    no_key = event(hook, 4)
    assert await ingest(store, first, again, other_body, no_key) == [
        (IngestOutcome.ACCEPTED, first.id),
        (IngestOutcome.DUPLICATE, first.id),
        (IngestOutcome.CONFLICT, first.id),
        (IngestOutcome.ACCEPTED, no_key.id),
    ]
    stored = await store.select(Event, webhook_id=hook.id)
    assert [e.id for e in stored] == [first.id, no_key.id]
    assert stored[0].body == first.body and stored[0].status is EventStatus.QUEUED
    # Later batches see the key too.
    assert await ingest(store, attrs.evolve(again, id="evt_later")) == [
        (IngestOutcome.DUPLICATE, first.id)
    ]


async def test_a_key_is_per_webhook_and_forgotten_after_the_window(store: SqlStore) -> None:
    _, (a, b) = await make_webhooks(store, 4, 4)
    old = attrs.evolve(event(a, 0, key="idempotency:k"), received_at=WINDOW_START - timedelta(1))
    assert (await ingest(store, old))[0][0] is IngestOutcome.ACCEPTED
    same_key_other_hook = event(b, 1, key="idempotency:k")
    after_window = event(a, 2, key="idempotency:k")
    assert await ingest(store, same_key_other_hook, after_window) == [
        (IngestOutcome.ACCEPTED, same_key_other_hook.id),
        (IngestOutcome.ACCEPTED, after_window.id),
    ]
    # The old event keeps its place in the log, without the key.
    assert (await store.get(Event, old.id)).dedup_key is None
    assert (await store.get(Event, after_window.id)).dedup_key == "idempotency:k"


async def test_an_event_of_a_deleted_webhook_is_gone_and_the_rest_stored(store: SqlStore) -> None:
    _, (a, b) = await make_webhooks(store, 4, 4)
    await store.delete(Webhook, b.id)
    kept, lost = event(a, 1), event(b, 2)
    assert await ingest(store, kept, lost) == [
        (IngestOutcome.ACCEPTED, kept.id),
        (IngestOutcome.GONE, None),
    ]
    assert await store.count(Event) == 1


async def test_an_event_of_a_draft_webhook_is_inactive_and_not_stored(store: SqlStore) -> None:
    _, (a, b) = await make_webhooks(store, 4, 4)
    await store.update(attrs.evolve(b, active=False))
    kept, refused = event(a, 1, key="k"), event(b, 2, key="k")
    assert await ingest(store, kept, refused) == [
        (IngestOutcome.ACCEPTED, kept.id),
        (IngestOutcome.INACTIVE, None),
    ]
    await store.update(attrs.evolve(b, active=True))
    assert await ingest(store, refused) == [(IngestOutcome.ACCEPTED, refused.id)]


async def test_webhooks_by_id_reads_those_that_exist(store: SqlStore) -> None:
    _, (a, b) = await make_webhooks(store, 4, 1)
    found = await store.webhooks_by_id([b.id, a.id, "wh_gone", a.id])
    assert found == {a.id: a, b.id: b}
    assert await store.webhooks_by_id([]) == {}


async def test_claims_respect_each_webhooks_concurrency(store: SqlStore) -> None:
    _, (hook,) = await make_webhooks(store, 2)
    events = [event(hook, n) for n in range(5)]
    await ingest(store, *events)
    got = await claim(store, "a", 10)
    assert [e.id for e in got] == [events[0].id, events[1].id]
    assert all(e.status is EventStatus.RUNNING and e.lease_owner == "a" for e in got)
    assert all(e.attempts == 1 and e.started_at == at(10) for e in got)
    # Another process sees the live leases and takes nothing.
    assert await claim(store, "b", 11) == []
    assert await store.finish_event(
        events[0].id, owner="a", status=EventStatus.DONE, now=at(12), message_id="msg_1"
    )
    assert [e.id for e in await claim(store, "b", 12)] == [events[2].id]
    done = await store.get(Event, events[0].id)
    assert done.status is EventStatus.DONE and done.message_id == "msg_1"
    assert done.finished_at == at(12) and done.lease_owner is None


async def test_concurrency_one_runs_in_arrival_order_even_across_retries(store: SqlStore) -> None:
    _, (hook,) = await make_webhooks(store, 1)
    events = [event(hook, n) for n in range(3)]
    await ingest(store, *events)
    (head,) = await claim(store, "a", 10)
    assert head.id == events[0].id
    assert await claim(store, "a", 10) == []
    # The head fails and waits for a retry: the later events wait behind it.
    assert await store.finish_event(
        head.id,
        owner="a",
        status=EventStatus.QUEUED,
        now=at(11),
        error="model: overloaded",
        available_at=at(20),
    )
    assert await claim(store, "a", 12) == []
    assert await store.next_event_due(at(12)) == at(20)
    (again,) = await claim(store, "a", 20)
    assert again.id == events[0].id and again.attempts == 2 and again.error == "model: overloaded"


async def test_claims_are_fair_between_webhooks(store: SqlStore) -> None:
    _, (busy, quiet) = await make_webhooks(store, 8, 8)
    await ingest(store, *[event(busy, n) for n in range(20)], event(quiet, 30))
    got = await claim(store, "a", 40, limit=2)
    assert sorted(e.webhook_id for e in got) == sorted([busy.id, quiet.id])


async def test_an_expired_lease_is_taken_over_and_its_owner_cannot_finish(
    store: SqlStore,
) -> None:
    _, (hook,) = await make_webhooks(store, 4)
    only = event(hook, 1)
    await ingest(store, only)
    await store.claim_events(owner="dead", now=at(2), lease_expires_at=at(5), limit=1)
    assert await claim(store, "b", 4) == []  # the lease still holds
    assert await store.next_event_due(at(4)) == at(5)
    (taken,) = await claim(store, "b", 5)
    assert taken.lease_owner == "b" and taken.attempts == 2
    assert not await store.finish_event(only.id, owner="dead", status=EventStatus.DONE, now=at(6))
    assert (await store.get(Event, only.id)).status is EventStatus.RUNNING


async def test_only_the_lease_holder_records_its_attempt(store: SqlStore) -> None:
    _, (hook,) = await make_webhooks(store, 4)
    only = event(hook, 1)
    await ingest(store, only)
    await store.claim_events(owner="dead", now=at(2), lease_expires_at=at(5), limit=1)
    await claim(store, "b", 5)

    def attempt(owner: str, number: int) -> EventAttempt:
        return EventAttempt(
            event_id=only.id,
            number=number,
            instance_id=owner,
            outcome="done",
            started_at=at(5),
            finished_at=at(6),
        )

    late = attempt("dead", 1)
    assert not await store.finish_event(
        only.id, owner="dead", status=EventStatus.DONE, now=at(6), attempt=late
    )
    assert await store.select(EventAttempt, event_id=only.id) == []
    kept = attempt("b", 2)
    assert await store.finish_event(
        only.id, owner="b", status=EventStatus.DONE, now=at(6), attempt=kept
    )
    assert [a.id for a in await store.select(EventAttempt, event_id=only.id)] == [kept.id]


async def test_finishing_an_event_deleted_with_its_webhook_is_refused_quietly(
    store: SqlStore,
) -> None:
    _, (hook,) = await make_webhooks(store, 4)
    only = event(hook, 1)
    await ingest(store, only)
    await claim(store, "a", 2)
    await store.delete(Webhook, hook.id)
    record = EventAttempt(
        event_id=only.id, number=1, instance_id="a", outcome="done", started_at=at(2)
    )
    assert not await store.finish_event(
        only.id, owner="a", status=EventStatus.DONE, now=at(3), attempt=record
    )
    assert await store.count(EventAttempt) == 0


async def test_an_interrupted_run_gives_its_attempt_back(store: SqlStore) -> None:
    _, (hook,) = await make_webhooks(store, 4)
    only = event(hook, 1)
    await ingest(store, only)
    await claim(store, "a", 2)
    assert await store.finish_event(
        only.id,
        owner="a",
        status=EventStatus.QUEUED,
        now=at(3),
        available_at=at(3),
        give_back_attempt=True,
    )
    back = await store.get(Event, only.id)
    assert back.status is EventStatus.QUEUED and back.attempts == 0 and back.finished_at is None
    assert [e.id for e in await claim(store, "b", 3)] == [only.id]


async def test_concurrent_claimers_never_share_an_event(store: SqlStore) -> None:
    _, hooks = await make_webhooks(store, 8, 8, 8)
    await ingest(store, *[event(hooks[n % 3], n) for n in range(24)])
    claimed: dict[str, list[str]] = {}

    async def claimer(owner: str) -> None:
        claimed[owner] = []
        while got := await claim(store, owner, 100, limit=3):
            claimed[owner] += [e.id for e in got]

    async with trio.open_nursery() as nursery:
        for owner in ("a", "b", "c"):
            nursery.start_soon(claimer, owner)
    everything = [i for ids in claimed.values() for i in ids]
    assert len(everything) == len(set(everything)) == 24


async def test_claimers_at_the_same_moment_take_different_events(store: SqlStore) -> None:
    _, (hook,) = await make_webhooks(store, 10)
    await ingest(store, *[event(hook, n) for n in range(10)])
    got: dict[str, list[Event]] = {}

    async def claimer(owner: str) -> None:
        got[owner] = await claim(store, owner, 100, limit=5)

    async with trio.open_nursery() as nursery:
        for owner in ("a", "b"):
            nursery.start_soon(claimer, owner)
    ids = [e.id for events in got.values() for e in events]
    assert len(ids) == len(set(ids))
    assert all(e.lease_owner == owner for owner, events in got.items() for e in events)
    if store.dialect == "postgres":
        # SKIP LOCKED: the second claimer takes the next events instead of losing
        # the first one's (SQLite's claims are one writer at a time anyway).
        assert sorted(len(events) for events in got.values()) == [5, 5]


async def test_recent_events_and_channel_messages(store: SqlStore) -> None:
    ws, (a, b) = await make_webhooks(store, 4, 4)
    await ingest(store, event(a, 1), event(b, 2), event(a, 3))
    recent = await store.recent_events(ws.id, limit=10)
    assert [e.received_at for e in recent] == [at(3), at(2), at(1)]
    only_a = await store.recent_events(ws.id, limit=1, webhook_id=a.id)
    assert [e.received_at for e in only_a] == [at(3)]
    assert await store.recent_events(ws.id, limit=5, status=EventStatus.DONE) == []

    messages = [
        await store.insert(
            ChatMessage(workspace_id=ws.id, channel="local:ops", text=f"m{n}", created_at=at(n))
        )
        for n in range(5)
    ]
    await store.insert(ChatMessage(workspace_id=ws.id, channel="local:other", text="x"))
    newest = await store.channel_messages(ws.id, "local:ops", limit=2)
    assert [m.text for m in newest] == ["m3", "m4"]
    after = await store.channel_messages(ws.id, "local:ops", limit=10, after=messages[1])
    assert [m.text for m in after] == ["m2", "m3", "m4"]


async def test_the_shared_rate_bucket_holds_across_concurrent_takers(store: SqlStore) -> None:
    _, (hook, other) = await make_webhooks(store, 4, 4)
    taken: list[float | None] = []

    async def take(now: datetime) -> None:
        taken.append(await store.take_rate_token(hook.id, rate_per_min=60, burst=5, now=now))

    # Twelve takers at once (as from several instances): the burst, and no more.
    async with trio.open_nursery() as nursery:
        for _ in range(12):
            nursery.start_soon(take, T0)
    assert taken.count(None) == 5
    waits = [w for w in taken if w is not None]
    assert len(waits) == 7 and all(0 < w <= 1.0 for w in waits)
    # One a second refills it; a webhook's bucket is its own.
    assert await store.take_rate_token(hook.id, rate_per_min=60, burst=5, now=at(0.5)) == 0.5
    assert await store.take_rate_token(hook.id, rate_per_min=60, burst=5, now=at(1)) is None
    assert await store.take_rate_token(hook.id, rate_per_min=60, burst=5, now=at(1)) == 1.0
    assert await store.take_rate_token(other.id, rate_per_min=60, burst=5, now=at(1)) is None
    # Ten seconds later it is full again: the burst, not more.
    later = [
        await store.take_rate_token(hook.id, rate_per_min=60, burst=5, now=at(11)) for _ in range(6)
    ]
    assert later == [None] * 5 + [1.0]
