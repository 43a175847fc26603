"""Capturing drafts' samples in the store, the same on SQLite and PostgreSQL.

A sample is stored through the group commit only while its webhook is a
draft that captures (checked in the transaction that stores it), and each
webhook keeps its newest ``keep``; the answer comes once both are durable.
Samples go with their webhook and stay when it is activated.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import attrs
import outcome
import trio

from agentws.domain.models import Webhook, WebhookSample
from agentws.store import SqlStore
from tests.contract.test_event_queue import T0, make_webhooks


async def _capture(store: SqlStore, samples: list[WebhookSample], keep: int) -> list[bool]:
    """Queue every sample at once (one group commit, or a few); whether each was stored."""
    answers: list[outcome.Outcome[bool] | None] = [None] * len(samples)
    left = trio.Semaphore(0)

    def answer_for(n: int) -> Callable[[outcome.Outcome[bool]], None]:
        def answer(result: outcome.Outcome[bool]) -> None:
            answers[n] = result
            left.release()

        return answer

    for n, sample in enumerate(samples):
        store.capture_nowait(sample, keep=keep, answer=answer_for(n))
    for _ in samples:
        await left.acquire()
    return [bool(a.unwrap()) for a in answers if a is not None]


def _sample(hook: Webhook, n: int) -> WebhookSample:
    return WebhookSample(
        webhook_id=hook.id,
        body=b'{"n": %d}' % n,
        headers={"user-agent": "test"},
        received_at=T0 + timedelta(seconds=n),
    )


async def _drafts(store: SqlStore) -> tuple[Webhook, Webhook]:
    _, (capturing, plain) = await make_webhooks(store, 4, 4)
    capturing = await store.update(attrs.evolve(capturing, active=False, capture=True))
    plain = await store.update(attrs.evolve(plain, active=False))
    return capturing, plain


async def test_a_capturing_draft_keeps_its_newest_samples(store: SqlStore) -> None:
    capturing, _ = await _drafts(store)
    stored = await _capture(store, [_sample(capturing, n) for n in range(7)], keep=5)
    kept = await store.select(WebhookSample, webhook_id=capturing.id)
    assert stored == [True] * 7
    assert [s.body for s in kept] == [b'{"n": %d}' % n for n in range(2, 7)]
    assert kept[0].headers == {"user-agent": "test"}
    assert kept[0].received_at == T0 + timedelta(seconds=2)
    # One more, later: the oldest kept goes.
    assert await _capture(store, [_sample(capturing, 7)], keep=5) == [True]
    kept = await store.select(WebhookSample, webhook_id=capturing.id)
    assert [s.body for s in kept] == [b'{"n": %d}' % n for n in range(3, 8)]


async def test_only_a_capturing_draft_gets_samples(store: SqlStore) -> None:
    capturing, plain = await _drafts(store)
    active = await store.update(attrs.evolve(plain, name="live", active=True, capture=True))
    assert await _capture(store, [_sample(active, 1)], keep=5) == [False]
    plain = await store.update(attrs.evolve(active, active=False, capture=False))
    assert await _capture(store, [_sample(plain, 1)], keep=5) == [False]
    gone = attrs.evolve(capturing, id="wh_gone")
    assert await _capture(store, [_sample(gone, 1)], keep=5) == [False]
    assert await store.count(WebhookSample) == 0


async def test_samples_stay_when_activated_and_go_with_their_webhook(store: SqlStore) -> None:
    capturing, _ = await _drafts(store)
    assert await _capture(store, [_sample(capturing, n) for n in range(3)], keep=5) == [True] * 3
    await store.update(attrs.evolve(capturing, active=True))
    assert await store.count(WebhookSample, webhook_id=capturing.id) == 3
    await store.delete(Webhook, capturing.id)
    assert await store.count(WebhookSample) == 0
