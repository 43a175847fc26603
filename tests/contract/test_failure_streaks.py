"""Failure streaks, the same on SQLite and PostgreSQL.

Finishing an event counts its webhook's streak in the same transaction:
each failure once, however many finish at once (several connections, as
several instances would); the one that reaches ``alert_after`` marks the
alert due, and pauses the webhook when it says so; a success ends the
streak. Notices are taken by one taker, given back, and finished once.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest
import trio

from agentws.domain.models import (
    Event,
    EventAttempt,
    EventStatus,
    FailureStreak,
    NoticeKind,
    Webhook,
    Workspace,
)
from agentws.store import SqlStore, open_store

T0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


async def make_webhook(store: SqlStore, **fields: object) -> Webhook:
    ws = await store.find(Workspace, slug="acme") or await store.insert(
        Workspace(slug="acme", name="Acme")
    )
    n = await store.count(Webhook)
    return await store.insert(
        Webhook(
            workspace_id=ws.id,
            name=f"hook-{n}",
            channel="local:ops",
            prompt="p",
            token_hash=f"hash-{n}",
            **fields,  # type: ignore[arg-type]
        )
    )


async def running_events(store: SqlStore, hook: Webhook, count: int, owner: str) -> list[Event]:
    """``count`` events of ``hook``, each running under ``owner``'s lease."""
    events = [
        Event(
            webhook_id=hook.id,
            body=b'{"n": %d}' % n,
            status=EventStatus.RUNNING,
            attempts=1,
            lease_owner=owner,
            lease_expires_at=at(600),
            received_at=at(n),
            available_at=at(n),
        )
        for n in range(count)
    ]
    await store.insert_many(events)
    return events


async def finish(
    store: SqlStore, event: Event, status: EventStatus, now: float, owner: str = "i-1"
) -> bool:
    return await store.finish_event(
        event.id,
        owner=owner,
        status=status,
        now=at(now),
        error="model: invalid request (400)" if status is EventStatus.FAILED else None,
        attempt=EventAttempt(event_id=event.id, number=1, instance_id=owner, outcome="x"),
    )


async def streaks(store: SqlStore, hook: Webhook) -> list[FailureStreak]:
    return await store.select(FailureStreak, webhook_id=hook.id)


async def test_failures_count_and_the_one_reaching_the_count_marks_the_alert(
    store: SqlStore,
) -> None:
    hook = await make_webhook(store, alert_after=3)
    events = await running_events(store, hook, 5, "i-1")
    assert await finish(store, events[0], EventStatus.FAILED, 1)
    assert await finish(store, events[1], EventStatus.FAILED, 2)
    (streak,) = await streaks(store, hook)
    assert (streak.failures, streak.alerted_at, streak.due) == (2, None, None)
    assert streak.started_at == at(1) and streak.last_event_id == events[1].id
    assert streak.last_error == "model: invalid request (400)"
    assert await finish(store, events[2], EventStatus.FAILED, 3)
    (streak,) = await streaks(store, hook)
    assert (streak.failures, streak.alerted_at, streak.due) == (3, at(3), NoticeKind.ALERT)
    assert streak.paused_at is None  # pause_on_failure is off
    assert (await store.get(Webhook, hook.id)).active
    # More failures count on, and mark nothing again.
    assert await finish(store, events[3], EventStatus.FAILED, 4)
    (streak,) = await streaks(store, hook)
    assert (streak.failures, streak.alerted_at) == (4, at(3))
    # A success ends the streak; its recovery is due once the alert is posted.
    assert await finish(store, events[4], EventStatus.DONE, 5)
    (streak,) = await streaks(store, hook)
    assert (streak.ended_at, streak.recovered_event_id) == (at(5), events[4].id)
    assert streak.due is NoticeKind.ALERT


async def test_a_retry_counts_nothing_and_a_lost_lease_counts_nothing(store: SqlStore) -> None:
    hook = await make_webhook(store, alert_after=1)
    (first, second) = await running_events(store, hook, 2, "i-1")
    assert await finish(store, first, EventStatus.QUEUED, 1)
    assert not await finish(store, second, EventStatus.FAILED, 2, owner="someone-else")
    assert await streaks(store, hook) == []


async def test_the_alert_pauses_a_webhook_that_says_so_and_a_success_ends_the_streak(
    store: SqlStore,
) -> None:
    hook = await make_webhook(store, alert_after=2, pause_on_failure=True)
    events = await running_events(store, hook, 4, "i-1")
    await finish(store, events[0], EventStatus.FAILED, 1)
    assert (await store.get(Webhook, hook.id)).active
    await finish(store, events[1], EventStatus.FAILED, 2)
    paused = await store.get(Webhook, hook.id)
    assert (paused.active, paused.paused_at) == (False, at(2))
    (streak,) = await streaks(store, hook)
    assert (streak.alerted_at, streak.paused_at) == (at(2), at(2))
    # Events already queued still run; a success ends the streak, the webhook stays paused.
    await finish(store, events[2], EventStatus.DONE, 3)
    assert not (await store.get(Webhook, hook.id)).active
    # The next failure opens a new streak.
    await finish(store, events[3], EventStatus.FAILED, 4)
    old, new = sorted(await streaks(store, hook), key=lambda s: s.started_at)
    assert old.ended_at == at(3) and (new.failures, new.ended_at) == (1, None)


async def test_alerts_off_count_but_never_alert_and_a_draft_is_not_marked_paused(
    store: SqlStore,
) -> None:
    off = await make_webhook(store, alert_after=0, pause_on_failure=True)
    draft = await make_webhook(store, alert_after=1, pause_on_failure=True, active=False)
    for hook in (off, draft):
        (event,) = await running_events(store, hook, 1, "i-1")
        await finish(store, event, EventStatus.FAILED, 1)
    (streak,) = await streaks(store, off)
    assert (streak.failures, streak.alerted_at) == (1, None)
    assert (await store.get(Webhook, off.id)).active
    (streak,) = await streaks(store, draft)
    assert (streak.alerted_at, streak.paused_at) == (at(1), None)
    assert (await store.get(Webhook, draft.id)).paused_at is None


async def test_failures_finished_at_once_on_several_connections_count_once_each(
    store: SqlStore, store_url: str
) -> None:
    hook = await make_webhook(store, alert_after=5, pause_on_failure=True)
    events = await running_events(store, hook, 12, "i-1")
    async with (
        open_store(store_url, pool_size=4) as other,
        trio.open_nursery() as nursery,
    ):
        for n, event in enumerate(events):
            nursery.start_soon(finish, other if n % 2 else store, event, EventStatus.FAILED, 1 + n)
    (streak,) = await streaks(store, hook)
    assert streak.failures == 12
    assert streak.alerted_at is not None and streak.paused_at == streak.alerted_at
    assert (await store.get(Webhook, hook.id)).paused_at == streak.alerted_at


async def test_a_notice_is_taken_once_given_back_and_finished_once(store: SqlStore) -> None:
    hook = await make_webhook(store, alert_after=1)
    (failed, done) = await running_events(store, hook, 2, "i-1")
    await finish(store, failed, EventStatus.FAILED, 1)
    (due,) = await store.due_failure_notices(now=at(2), limit=10)
    taken = await store.take_failure_notice(due.id, owner="a", now=at(2), until=at(62))
    assert taken is not None and taken.notice_owner == "a"
    assert await store.take_failure_notice(due.id, owner="b", now=at(3), until=at(63)) is None
    assert await store.due_failure_notices(now=at(3), limit=10) == []
    # Given back: due again from the time it says, to anyone.
    await store.release_failure_notice(due.id, owner="a", not_before=at(30), error="chat busy")
    assert await store.due_failure_notices(now=at(20), limit=10) == []
    taken = await store.take_failure_notice(due.id, owner="b", now=at(31), until=at(91))
    assert taken is not None and taken.notice_error == "chat busy"
    assert not await store.finish_failure_notice(
        due.id, NoticeKind.ALERT, owner="a", now=at(32), message_id="m-0", error=None
    )
    assert await store.finish_failure_notice(
        due.id, NoticeKind.ALERT, owner="b", now=at(32), message_id="m-1", error=None
    )
    (streak,) = await streaks(store, hook)
    assert (streak.alert_message_id, streak.due, streak.notice_owner) == ("m-1", None, None)
    # A lease that runs out (its taker died) makes the notice due again.
    await finish(store, done, EventStatus.DONE, 40)
    (due,) = await store.due_failure_notices(now=at(41), limit=10)
    assert due.due is NoticeKind.RECOVERY
    assert await store.take_failure_notice(due.id, owner="c", now=at(41), until=at(101))
    assert await store.due_failure_notices(now=at(100), limit=10) == []
    assert await store.take_failure_notice(due.id, owner="d", now=at(102), until=at(160))
    assert await store.finish_failure_notice(
        due.id, NoticeKind.RECOVERY, owner="d", now=at(103), message_id="m-2", error=None
    )
    assert await store.due_failure_notices(now=at(104), limit=10) == []
    # Ended with nothing left to post: forgotten once old enough.
    assert await store.forget_failure_streaks(ended_before=at(40)) == 0
    assert await store.forget_failure_streaks(ended_before=at(41)) == 1
    assert await store.latest_failure_streak(hook.id) is None


@pytest.mark.parametrize("kind", list(NoticeKind))
async def test_a_finished_notice_is_not_finished_again(store: SqlStore, kind: NoticeKind) -> None:
    hook = await make_webhook(store, alert_after=1)
    (failed, done) = await running_events(store, hook, 2, "i-1")
    await finish(store, failed, EventStatus.FAILED, 1)
    await finish(store, done, EventStatus.DONE, 2)
    streak = await store.latest_failure_streak(hook.id)
    assert streak is not None
    if kind is NoticeKind.RECOVERY:
        await store.take_failure_notice(streak.id, owner="a", now=at(3), until=at(60))
        await store.finish_failure_notice(
            streak.id, NoticeKind.ALERT, owner="a", now=at(4), message_id=None, error="gone"
        )
    assert await store.take_failure_notice(streak.id, owner="a", now=at(5), until=at(60))
    assert await store.finish_failure_notice(
        streak.id, kind, owner="a", now=at(6), message_id="m", error=None
    )
    stored = attrs.evolve(await store.get(FailureStreak, streak.id), notice_owner="a")
    await store.update(stored)
    assert not await store.finish_failure_notice(
        streak.id, kind, owner="a", now=at(7), message_id="m2", error=None
    )
