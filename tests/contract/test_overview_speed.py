"""A week of traffic in a SQLite store, read by ``read_overview`` before and after the
minute task rolls it up: events (their messages, attempts' usage) and tool-call audit
rows spread over 7 days. It asserts that the figures add up, and prints how long each
read took (``-s`` shows them). The times are read, not enforced: ``scripts/bench
dashboard`` measures the pages with 100,000 events and 10,000 audit rows. The default
run seeds a twentieth of that (the sums are the same whatever the size); the thorough
tier seeds it all.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agentws.domain.models import (
    AuditEntry,
    ChatMessage,
    Event,
    EventAttempt,
    EventStatus,
    Webhook,
    Workspace,
)
from agentws.rollups import read_overview
from agentws.rollups.minutes import MinuteRollup
from agentws.store import SqlStore, open_store
from tests.tiers import examples

EVENTS = examples(100_000, 5_000)
AUDIT_ROWS = examples(10_000, 1_000)
# Within the 7-day range, whose first point starts on the hour 167 hours before the last.
WEEK_S = 167 * 3600


async def _seed(store: SqlStore, now: datetime) -> Workspace:
    rng = random.Random(27)  # noqa: S311 - test data, not secrets
    ws = await store.insert(Workspace(slug="acme", name="Acme"))
    hooks = [
        await store.insert(
            Webhook(
                workspace_id=ws.id,
                name=f"hook-{i}",
                channel="local:ops",
                prompt="p",
                token_hash=f"hash-{i}",
            )
        )
        for i in range(5)
    ]
    events, messages, attempts = [], [], []
    for n in range(EVENTS):
        received = now - timedelta(seconds=rng.uniform(0, WEEK_S))
        finished = received + timedelta(milliseconds=rng.lognormvariate(7, 0.8))
        status = EventStatus.FAILED if n % 20 == 0 else EventStatus.DONE
        event = Event(
            webhook_id=hooks[n % 5].id,
            body=b'{"n": 1}',
            body_hash="h",
            status=status,
            received_at=received,
            available_at=received,
            finished_at=finished,
        )
        events.append(event)
        if status is EventStatus.DONE:
            messages.append(
                ChatMessage(
                    workspace_id=ws.id,
                    channel="ops",
                    text="ok",
                    event_id=event.id,
                    created_at=finished - timedelta(milliseconds=5),
                )
            )
        if n % 10 == 0:
            attempts.append(
                EventAttempt(
                    event_id=event.id,
                    number=1,
                    instance_id="i1",
                    outcome=status.value,
                    usage={"input_tokens": 900, "output_tokens": 120},
                    started_at=received,
                    finished_at=finished,
                )
            )
    for start in range(0, len(events), 5000):
        await store.insert_many(events[start : start + 5000])
    for start in range(0, len(messages), 5000):
        await store.insert_many(messages[start : start + 5000])
    await store.insert_many(attempts)
    decisions = [("run", "ran"), ("queue", "queued"), ("confirm", "confirmed_and_ran")]
    audit = [
        AuditEntry(
            workspace_id=ws.id,
            actor="mcp:tok",
            action="tool.call",
            target="gh_merge",
            detail=dict(zip(("decision", "outcome"), decisions[n % 3], strict=True)),
            created_at=now - timedelta(seconds=rng.uniform(0, WEEK_S)),
        )
        for n in range(AUDIT_ROWS)
    ]
    for start in range(0, len(audit), 5000):
        await store.insert_many(audit[start : start + 5000])
    return ws


async def _best_ms(store: SqlStore, ws: Workspace, name: str, now: datetime) -> float:
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        answer = await read_overview(store, ws.id, name, now=now)
        best = min(best, (time.perf_counter() - began) * 1000)
    assert answer["totals"]["events_received"] <= EVENTS
    return best


async def test_a_week_of_traffic_adds_up_before_and_after_the_rollup(tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    async with open_store(f"sqlite:///{tmp_path / 'speed.db'}") as store:
        ws = await _seed(store, now)
        unrolled = await _best_ms(store, ws, "7d", now)
        began = time.perf_counter()
        await MinuteRollup(store, "i1", 8, sessions=list, clock=lambda: now).round()
        first_roll = (time.perf_counter() - began) * 1000
        later = now + timedelta(minutes=1)
        began = time.perf_counter()
        await MinuteRollup(store, "i1", 8, sessions=list, clock=lambda: later).round()
        next_roll = (time.perf_counter() - began) * 1000
        times = {name: await _best_ms(store, ws, name, now) for name in ("1h", "24h", "7d")}
        week = await read_overview(store, ws.id, "7d", now=now)
        assert week["totals"]["events_received"] == EVENTS
        assert week["totals"]["events_failed"] == EVENTS // 20
        assert week["totals"]["tool_calls"] == AUDIT_ROWS
        assert week["totals"]["model_tokens"] == (EVENTS // 10) * 1020
    print(
        f"\nread_overview with {EVENTS} events and {AUDIT_ROWS} audit rows (SQLite, best of 5):"
        + "".join(f" {name} {ms:.1f} ms;" for name, ms in times.items())
        + f" 7d before any rollup {unrolled:.1f} ms;"
        f" first rollup (8 days) {first_roll:.0f} ms, a minute's round {next_roll:.1f} ms"
    )
