"""The overview's rollups in the store, the same on SQLite and PostgreSQL.

A known workload is written straight to the tables the figures are counted
from (events, channel messages, attempts' usage, tool-call audit entries,
the delivery log, the approval queue); ``read_overview`` finds it exactly,
first from the sources alone, then after the minute task rolled the closed
minutes (and hours) up, on every range. Rolling is idempotent between
instances (one moves the mark, the other changes nothing), sessions samples
of several instances add up, and old buckets are forgotten.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import trio

from agentws.core.errors import ValidationError
from agentws.domain.delivery_log import Delivery
from agentws.domain.models import (
    Approval,
    AuditEntry,
    Capability,
    ChatMessage,
    Event,
    EventAttempt,
    EventStatus,
    Group,
    Instance,
    McpToken,
    Webhook,
    Workspace,
    arguments_hash,
)
from agentws.domain.rollups import MINUTE, Bucket, RollupMark, bin_of, bin_value
from agentws.rollups import read_overview
from agentws.rollups.minutes import MinuteRollup, recount
from agentws.store import SqlStore
from tests.contract.test_delivery_log_store import Written

# The read's moment: 20 s into a minute, 30 minutes into an hour.
T = datetime(2026, 5, 1, 12, 30, 20, tzinfo=UTC)


def _minute(when: datetime) -> int:
    return int(when.timestamp()) // 60


class Seeded:
    def __init__(self, ws: Workspace, other: Workspace, a: Webhook, b: Webhook) -> None:
        self.ws, self.other, self.a, self.b = ws, other, a, b


async def _hook(store: SqlStore, ws: Workspace, name: str) -> Webhook:
    return await store.insert(
        Webhook(
            workspace_id=ws.id,
            name=name,
            channel="local:ops",
            prompt="p",
            token_hash=hashlib.sha256(name.encode()).hexdigest(),
        )
    )


async def _event(
    store: SqlStore,
    hook: Webhook,
    received: datetime,
    status: EventStatus = EventStatus.QUEUED,
    *,
    finished: datetime | None = None,
    posted_after_ms: float | None = None,
    usage: dict[str, int] | None = None,
) -> Event:
    event = await store.insert(
        Event(
            webhook_id=hook.id,
            body=b"{}",
            body_hash="h",
            status=status,
            received_at=received,
            available_at=received,
            finished_at=finished,
        )
    )
    if posted_after_ms is not None:
        await store.insert(
            ChatMessage(
                workspace_id=hook.workspace_id,
                channel="ops",
                text="done",
                event_id=event.id,
                created_at=received + timedelta(milliseconds=posted_after_ms),
            )
        )
    if usage is not None:
        await store.insert(
            EventAttempt(
                event_id=event.id,
                number=1,
                instance_id="i1",
                outcome="done",
                usage=usage,
                started_at=received,
                finished_at=finished,
            )
        )
    return event


def _call(ws: Workspace, decision: str, outcome: str, at: datetime) -> AuditEntry:
    return AuditEntry(
        workspace_id=ws.id,
        actor="mcp:tok",
        action="tool.call",
        target="gh_merge",
        detail={"decision": decision, "outcome": outcome, "arguments_hash": "x"},
        created_at=at,
    )


async def seed(store: SqlStore) -> Seeded:
    ws = await store.insert(Workspace(slug="acme", name="Acme"))
    other = await store.insert(Workspace(slug="other", name="Other"))
    a, b, c = await _hook(store, ws, "alpha"), await _hook(store, ws, "beta"), None
    c = await _hook(store, other, "gamma")
    early = T - timedelta(minutes=25)
    done_at = T - timedelta(minutes=24)
    await _event(store, a, early, EventStatus.DONE, finished=done_at, posted_after_ms=100)
    await _event(
        store,
        a,
        early,
        EventStatus.DONE,
        finished=done_at,
        posted_after_ms=2000,
        usage={"input_tokens": 100, "cache_read_input_tokens": 20, "output_tokens": 30},
    )
    await _event(store, a, early, EventStatus.FAILED, finished=done_at)
    await _event(store, b, T - timedelta(seconds=10), EventStatus.QUEUED)
    await _event(
        store,
        b,
        T - timedelta(seconds=15),
        EventStatus.DONE,
        finished=T - timedelta(seconds=5),
        posted_after_ms=50,
    )
    for _ in range(5):
        await _event(store, c, early, EventStatus.DONE, finished=done_at, posted_after_ms=9)
    calls_at = T - timedelta(minutes=10)
    await store.insert_many(
        [
            _call(ws, "run", "ran", calls_at),
            _call(ws, "run", "ran", calls_at),
            _call(ws, "queue", "queued", calls_at),
            _call(ws, "confirm", "confirmed_and_ran", calls_at),
            _call(ws, "confirm", "asked", calls_at),
            _call(ws, "deny", "denied", calls_at),
            _call(other, "run", "ran", calls_at),
        ]
    )
    written = Written()
    refused_at = T - timedelta(minutes=5)

    def row(hook: Webhook, status: int, reason: str, omitted: int = 0) -> Delivery:
        return Delivery(
            webhook_id=hook.id,
            received_at=refused_at,
            status=status,
            reason=reason,
            body_bytes=10,
            omitted=omitted,
        )

    store.log_deliveries_nowait(
        [
            row(a, 401, "invalid_signature"),
            row(a, 401, "invalid_signature"),
            row(b, 200, "duplicate"),
            row(b, 429, "rate_limited", omitted=3),
            row(c, 401, "invalid_signature"),
        ],
        written.answer("rows"),
    )
    await written.wait()
    group = await store.insert(Group(workspace_id=ws.id, slug="ops", name="Ops"))
    token = await store.insert(
        McpToken(group_id=group.id, name="t", token_hash=hashlib.sha256(b"t").hexdigest(), hint="t")
    )
    for minutes in (1, 5):
        await store.insert(
            Approval(
                group_id=group.id,
                token_id=token.id,
                requested_by=f"mcp:{token.id}",
                tool_name="gh_merge",
                capability=Capability.WRITE,
                definition_hash="d" * 64,
                arguments={"m": minutes},
                arguments_hash=arguments_hash("gh_merge", {"m": minutes}),
                created_at=T - timedelta(minutes=minutes),
                expires_at=T + timedelta(hours=1),
            )
        )
    return Seeded(ws, other, a, b)


EXPECTED_TOTALS: dict[str, Any] = {
    "events_received": 5,
    "events_done": 3,
    "events_failed": 1,
    "refused": 6,
    "tool_calls": 5,
    "model_tokens": 150,
    "latency_p50_ms": round(bin_value(bin_of(100)), 3),
    "latency_p99_ms": round(bin_value(bin_of(2000)), 3),
    "approvals_depth": 2,
    "sessions": 0,
}


def _at(answer: dict[str, Any], when: datetime) -> int:
    """The index of the point holding ``when``."""
    labels = [datetime.fromisoformat(label) for label in answer["labels"]]
    return max(i for i, start in enumerate(labels) if start <= when)


def check_hour(answer: dict[str, Any]) -> None:
    assert answer["range"] == "1h"
    assert answer["step_s"] == 60
    assert len(answer["labels"]) == 60
    assert answer["labels"][-1] == "2026-05-01T12:30:00+00:00"
    assert answer["from"] == "2026-05-01T11:31:00+00:00"
    series = answer["series"]
    early, last = _at(answer, T - timedelta(minutes=25)), 59
    done = _at(answer, T - timedelta(minutes=24))
    assert series["events_received"]["alpha"][early] == 3
    assert sum(series["events_received"]["alpha"]) == 3
    assert series["events_received"]["beta"][last] == 2
    assert "gamma" not in series["events_received"]
    assert series["events_done"]["alpha"][done] == 2
    assert series["events_failed"]["alpha"][done] == 1
    assert series["events_done"]["beta"][last] == 1
    assert series["events_failed"]["beta"] == [0] * 60
    calls = _at(answer, T - timedelta(minutes=10))
    assert {k: v[calls] for k, v in series["tool_calls"].items()} == {
        "ran": 2,
        "queued": 1,
        "confirmed": 1,
        "denied": 1,
    }
    assert series["model_tokens"]["input"][done] == 120
    assert series["model_tokens"]["output"][done] == 30
    refused = _at(answer, T - timedelta(minutes=5))
    assert {k: v[refused] for k, v in series["refused"].items()} == {
        "invalid_signature": 2,
        "rate_limited": 1,
        "unlogged": 3,
    }
    assert series["latency_ms"]["p50"][done] == round(bin_value(bin_of(100)), 3)
    assert series["latency_ms"]["p99"][done] == round(bin_value(bin_of(2000)), 3)
    assert series["latency_ms"]["p50"][last] == round(bin_value(bin_of(50)), 3)
    assert series["latency_ms"]["p50"][0] is None
    assert series["approvals"]["depth"][last] == 2
    assert series["approvals"]["oldest_s"][last] == pytest.approx(300.0)
    assert set(series["sessions"]) == {"sse", "streamable"}
    assert answer["totals"] == EXPECTED_TOTALS


async def test_read_from_sources_alone(store: SqlStore) -> None:
    seeded = await seed(store)
    assert await store.rollup_mark() is None
    answer = await read_overview(store, seeded.ws.id, "1h", now=T)
    check_hour(answer)
    assert answer["series"]["approvals"]["depth"][:59] == [None] * 59
    for name in ("24h", "7d"):
        wide = await read_overview(store, seeded.ws.id, name, now=T)
        assert wide["totals"] == EXPECTED_TOTALS
    with pytest.raises(ValidationError):
        await read_overview(store, seeded.ws.id, "2h", now=T)


async def test_read_after_rollups(store: SqlStore) -> None:
    seeded = await seed(store)
    task = MinuteRollup(
        store,
        "i1",
        8,
        sessions=lambda: [(seeded.ws.id, "streamable")] * 2 + [(seeded.ws.id, "sse")],
        clock=lambda: T,
    )
    await task.round()
    mark = await store.rollup_mark()
    # Minutes that ended 30 s ago are rolled; the current one and the last are not.
    assert mark is not None
    assert mark.minute == _minute(T) - 1
    answer = await read_overview(store, seeded.ws.id, "1h", now=T)
    check_hour(answer)
    # The sample of this minute, by an instance that is not live: in the point, not the total.
    assert answer["series"]["sessions"]["streamable"][-1] == 2
    assert answer["totals"]["sessions"] == 0
    # The same figures once whole hours are rolled up too.
    later = T + timedelta(hours=2)
    await MinuteRollup(store, "i1", 8, sessions=list, clock=lambda: later).round()
    mark = await store.rollup_mark()
    assert mark is not None
    assert mark.minute == _minute(later) - 1
    for name in ("24h", "7d"):
        wide = await read_overview(store, seeded.ws.id, name, now=later)
        assert {k: v for k, v in wide["totals"].items()} == EXPECTED_TOTALS
    week = await read_overview(store, seeded.ws.id, "7d", now=later)
    hour = _at(week, T)
    assert week["series"]["events_received"]["alpha"][hour] == 3
    assert week["series"]["events_received"]["beta"][hour] == 2
    assert week["series"]["approvals"]["depth"][hour] == 2
    assert week["series"]["sessions"]["streamable"][hour] == 2
    assert week["series"]["latency_ms"]["p99"][hour] == round(bin_value(bin_of(2000)), 3)
    # Another workspace's figures stay its own.
    theirs = await read_overview(store, seeded.other.id, "24h", now=later)
    assert theirs["totals"]["events_received"] == 5
    assert theirs["totals"]["refused"] == 1
    assert theirs["totals"]["tool_calls"] == 1


async def test_rolling_twice_changes_nothing(store: SqlStore) -> None:
    seeded = await seed(store)
    first = MinuteRollup(store, "i1", 8, sessions=list, clock=lambda: T)
    second = MinuteRollup(store, "i2", 8, sessions=list, clock=lambda: T)
    await first.round()
    assert await second.roll(T) == 0
    mark = await store.rollup_mark()
    assert mark is not None
    # A roller that read the mark before it moved writes nothing.
    stale = RollupMark(minute=mark.minute - 1, delivery_id=0)
    bogus = [Bucket(seeded.ws.id, MINUTE, mark.minute - 1, "received", seeded.a.id, 99.0)]
    assert not await store.roll_up(bogus, [], mark=stale, to=mark)
    answer = await read_overview(store, seeded.ws.id, "1h", now=T)
    check_hour(answer)


async def test_sessions_of_live_instances_add_up(store: SqlStore) -> None:
    seeded = await seed(store)
    now = datetime.now(UTC)
    for instance, count in (("i1", 2), ("i2", 3), ("gone", 7)):
        task = MinuteRollup(
            store,
            instance,
            8,
            sessions=lambda n=count: [(seeded.ws.id, "streamable")] * n,
            clock=lambda: now,
        )
        await task.sample(now)
    for instance in ("i1", "i2"):
        await store.heartbeat(Instance(id=instance, internal_url="http://127.0.0.1:1"))
    answer = await read_overview(store, seeded.ws.id, "1h", now=now)
    assert answer["totals"]["sessions"] == 5
    # The point is the minute's sum over every instance that sampled it.
    assert answer["series"]["sessions"]["streamable"][-1] == 12
    assert answer["series"]["sessions"]["sse"][-1] == 0


async def test_old_buckets_are_forgotten(store: SqlStore) -> None:
    seeded = await seed(store)
    await MinuteRollup(store, "i1", 8, sessions=list, clock=lambda: T).round()
    later = T + timedelta(days=9)
    await MinuteRollup(store, "i1", 8, sessions=list, clock=lambda: later).round()
    wide = await read_overview(store, seeded.ws.id, "7d", now=later)
    assert wide["totals"]["events_received"] == 0
    rows = await store.database.fetch(
        "SELECT count(*) AS n FROM rollup_buckets WHERE minute < $1",
        _minute(later) - 8 * 24 * 60,
    )
    assert rows[0]["n"] == 0


async def test_history_written_behind_the_mark_shows_once_recounted(store: SqlStore) -> None:
    seeded = await seed(store)
    await MinuteRollup(store, "i1", 8, sessions=list, clock=lambda: T).round()
    # An import of old events, after their minutes were rolled up (and beyond the
    # minutes a read counts at the source).
    for _ in range(4):
        await _event(store, seeded.a, T - timedelta(hours=5))
    day = await read_overview(store, seeded.ws.id, "24h", now=T)
    assert day["totals"]["events_received"] == 5
    assert await recount(store, retention_days=8, now=T) > 0
    day = await read_overview(store, seeded.ws.id, "24h", now=T)
    assert day["totals"] == {**EXPECTED_TOTALS, "events_received": 9}
    # The gauges sampled before stay.
    assert day["series"]["approvals"]["depth"][-1] == 2


async def test_instances_rolling_at_once_count_each_minute_once(store: SqlStore) -> None:
    seeded = await seed(store)
    rolled: list[int] = []

    async def roll(instance: str, now: datetime) -> None:
        task = MinuteRollup(store, instance, 8, sessions=list, clock=lambda: now)
        rolled.append(await task.roll(now))

    async with trio.open_nursery() as nursery:
        for instance in ("i1", "i2", "i3"):
            nursery.start_soon(roll, instance, T)
    # The catch-up is shared out; together they rolled once the minutes from the oldest
    # row counted (the seed's events, 25 minutes back) to the last one settled.
    oldest = await store.oldest_rollup_source()
    assert oldest == T - timedelta(minutes=25)
    settled = int((T - timedelta(seconds=30)).timestamp()) // 60
    assert sum(rolled) == settled - int(oldest.timestamp()) // 60
    later = T + timedelta(hours=1)
    rolled.clear()
    async with trio.open_nursery() as nursery:
        for instance in ("i1", "i2", "i3"):
            nursery.start_soon(roll, instance, later)
    assert sum(rolled) == 60
    day = await read_overview(store, seeded.ws.id, "24h", now=later)
    assert day["totals"] == EXPECTED_TOTALS


async def test_a_first_roll_starts_at_the_oldest_row_it_counts(store: SqlStore) -> None:
    # A new store has nothing behind it: the first roll starts at the present, and
    # holds no writer lock for days of empty minutes.
    assert await store.oldest_rollup_source() is None
    assert await MinuteRollup(store, "i1", 8, sessions=list).roll(T) == 0
    mark = await store.rollup_mark()
    assert mark is not None
    assert mark.minute == int((T - timedelta(seconds=30)).timestamp()) // 60


async def test_refusals_left_out_of_the_log_count_whatever_row_carries_them(
    store: SqlStore,
) -> None:
    # The delivery log's rate bound is shared by refusals and duplicates: the refusals
    # left out during a flood are carried by the next row written, a duplicate's too.
    seeded = await seed(store)
    at = T - timedelta(minutes=2)
    written = Written()
    store.log_deliveries_nowait(
        [
            Delivery(
                webhook_id=seeded.a.id,
                received_at=at,
                status=200,
                reason="duplicate",
                body_bytes=10,
                omitted=4,
            )
        ],
        written.answer("rows"),
    )
    await written.wait()
    answer = await read_overview(store, seeded.ws.id, "1h", now=T)
    minute = _at(answer, at)
    assert answer["series"]["refused"]["unlogged"][minute] == 4
    assert answer["totals"]["refused"] == EXPECTED_TOTALS["refused"] + 4
    # The same once rolled up.
    await MinuteRollup(store, "i1", 8, sessions=list, clock=lambda: T).round()
    rolled = await read_overview(store, seeded.ws.id, "1h", now=T)
    assert rolled["series"]["refused"] == answer["series"]["refused"]
