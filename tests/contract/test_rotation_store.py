"""A rotated webhook in the store, the same on SQLite and PostgreSQL.

The transaction that stores a delivery's event checks the URL and secret
generations it came through: the current ones always, the previous ones
only while their grace lasts at the instant the event was received. What
it refuses, :meth:`not_ingested` explains (``gone``: the URL; ``unverified``:
the secret). The events' generations are counted for the operator.
"""

from __future__ import annotations

from datetime import timedelta

import attrs

from agentws.domain.deliveries import IngestOutcome
from agentws.domain.models import Event, Webhook
from agentws.store import SqlStore
from tests.contract.test_event_queue import WINDOW_START, at, make_webhooks


async def rotated(store: SqlStore, *, grace_ends: float) -> Webhook:
    """A webhook on its second URL and second secret, the first ones good until ``grace_ends``."""
    _, (hook,) = await make_webhooks(store, 4)
    return await store.update(
        attrs.evolve(
            hook,
            token_hash="hash-new",
            token_generation=2,
            previous_token_hash="hash-0",
            previous_token_until=at(grace_ends),
            token_rotated_at=at(0),
            secret=b"sealed-new",
            secret_generation=2,
            previous_secret=b"sealed-old",
            previous_secret_until=at(grace_ends),
            secret_rotated_at=at(0),
        )
    )


def delivery(
    hook: Webhook, n: int, url: int | None, secret: int | None, *, received: float | None = None
) -> Event:
    when = at(n if received is None else received)
    return Event(
        webhook_id=hook.id,
        body=b'{"n": %d}' % n,
        dedup_key=f"k{n}",
        received_at=when,
        available_at=when,
        url_generation=url,
        secret_generation=secret,
    )


async def test_generations_are_checked_when_the_event_is_stored(store: SqlStore) -> None:
    hook = await rotated(store, grace_ends=100)
    cases = [
        (delivery(hook, 1, 2, 2), IngestOutcome.ACCEPTED),
        (delivery(hook, 2, 1, 2), IngestOutcome.ACCEPTED),  # the old URL, in its grace
        (delivery(hook, 3, 2, 1), IngestOutcome.ACCEPTED),  # the old secret, in its grace
        (delivery(hook, 4, None, None), IngestOutcome.ACCEPTED),  # not through the URL
        (delivery(hook, 5, 1, 2, received=150), IngestOutcome.GONE),  # grace over
        (delivery(hook, 6, 2, 1, received=150), IngestOutcome.UNVERIFIED),
        (delivery(hook, 7, 0, 2), IngestOutcome.GONE),  # two rotations back
        (delivery(hook, 8, 2, 0), IngestOutcome.UNVERIFIED),
        (delivery(hook, 9, 3, 2), IngestOutcome.GONE),  # a generation not issued
    ]
    results = await store.ingest_events([e for e, _ in cases], dedup_since=WINDOW_START)
    got = [(e.dedup_key, r.outcome) for (e, _), r in zip(cases, results, strict=True)]
    assert got == [(e.dedup_key, want) for e, want in cases]
    stored = {e.dedup_key: e for e in await store.select(Event, webhook_id=hook.id)}
    assert sorted(stored) == ["k1", "k2", "k3", "k4"]
    assert (stored["k2"].url_generation, stored["k2"].secret_generation) == (1, 2)
    assert (stored["k4"].url_generation, stored["k4"].secret_generation) == (None, None)


async def test_an_ended_grace_stops_the_previous_ones(store: SqlStore) -> None:
    hook = await rotated(store, grace_ends=100)
    await store.update(
        attrs.evolve(
            hook,
            previous_token_hash=None,
            previous_token_until=None,
            previous_secret=None,
            previous_secret_until=None,
        )
    )
    results = await store.ingest_events(
        [delivery(hook, 1, 1, 2), delivery(hook, 2, 2, 1), delivery(hook, 3, 2, 2)],
        dedup_since=WINDOW_START,
    )
    assert [r.outcome for r in results] == [
        IngestOutcome.GONE,
        IngestOutcome.UNVERIFIED,
        IngestOutcome.ACCEPTED,
    ]


async def test_the_previous_url_is_found_by_its_hash(store: SqlStore) -> None:
    hook = await rotated(store, grace_ends=100)
    found = await store.find(Webhook, previous_token_hash="hash-0")
    assert found is not None and found.id == hook.id
    assert found.previous_token_until == at(100)
    assert await store.find(Webhook, token_hash="hash-0") is None


async def test_deliveries_are_counted_by_generation_since_the_rotation(store: SqlStore) -> None:
    hook = await rotated(store, grace_ends=100)
    events = [
        delivery(hook, -5, 1, 1),  # before the rotation: not counted
        delivery(hook, 1, 1, 1),
        delivery(hook, 2, 1, 2),
        delivery(hook, 3, 2, 2),
        delivery(hook, 4, 2, 2),
        delivery(hook, 5, 2, None),
    ]
    await store.ingest_events(events, dedup_since=WINDOW_START - timedelta(hours=1))
    url = await store.delivery_generations(hook.id, "url", 2, at(0))
    assert (url.current, url.previous, url.last_previous) == (3, 2, at(2))
    secret = await store.delivery_generations(hook.id, "secret", 2, at(0))
    assert (secret.current, secret.previous, secret.last_previous) == (3, 1, at(1))
    none_yet = await store.delivery_generations(hook.id, "url", 2, at(10))
    assert (none_yet.current, none_yet.previous, none_yet.last_previous) == (0, 0, None)
