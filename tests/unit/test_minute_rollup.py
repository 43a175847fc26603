"""MinuteRollup's rounds on trio's clock: one just after each minute starts, each
sampling that minute; a round the store fails is logged and the next comes as usual;
close() ends the task. The store here is a fake that records what it is asked."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import trio
import trio.testing

from agentws.core.errors import StoreUnavailableError
from agentws.domain.rollups import MINUTE, Bucket, RollupMark
from agentws.rollups.minutes import MinuteRollup
from tests.unit.store_fakes import UnusedRollups, UnusedRollupSources

BASE = datetime(2026, 5, 1, 12, 0, 40, tzinfo=UTC)


class FakeStore(UnusedRollupSources, UnusedRollups):
    """The rollup's queries, recorded; a round fails when :attr:`fail_next` is set."""

    def __init__(self) -> None:
        self.samples: list[Bucket] = []
        self.mark: RollupMark | None = None
        self.rolls: list[tuple[int, int]] = []
        self.forgotten: list[int] = []
        self.fail_next = False
        #: When the oldest row to count was written (None: an empty store).
        self.oldest: datetime | None = BASE - timedelta(days=30)

    async def approval_buckets(
        self, now: datetime, *, workspace_id: str | None = None
    ) -> list[Bucket]:
        if self.fail_next:
            self.fail_next = False
            raise StoreUnavailableError("the database is away")
        minute = int(now.timestamp()) // 60
        return [Bucket("ws1", MINUTE, minute, "approvals_depth", "", 1.0)]

    async def save_samples(self, buckets: Sequence[Bucket]) -> None:
        self.samples += buckets

    async def rollup_mark(self) -> RollupMark | None:
        return self.mark

    async def roll_up(
        self,
        counted: Sequence[Bucket],
        added: Sequence[Bucket],
        *,
        mark: RollupMark | None,
        to: RollupMark,
    ) -> bool:
        if mark != self.mark:
            return False
        if mark is not None:
            self.rolls.append((mark.minute, to.minute))
        self.mark = to
        return True

    async def source_buckets(
        self, start_minute: int, end_minute: int, *, workspace_id: str | None = None
    ) -> list[Bucket]:
        return []

    async def oldest_rollup_source(self) -> datetime | None:
        return self.oldest

    async def refusal_buckets(
        self,
        *,
        after_id: int,
        workspace_id: str | None = None,
        received_before: datetime | None = None,
    ) -> tuple[list[Bucket], int]:
        return [], after_id

    async def forget_rollups(self, before_minute: int) -> int:
        self.forgotten.append(before_minute)
        return 0


def _minute(when: datetime) -> int:
    return int(when.timestamp()) // 60


async def test_a_round_each_minute_on_trios_clock(autojump_clock: trio.testing.MockClock) -> None:
    store = FakeStore()
    started = trio.current_time()

    def clock() -> datetime:
        return BASE + timedelta(seconds=trio.current_time() - started)

    task = MinuteRollup(
        store,
        "i1",
        8,
        sessions=lambda: [("ws1", "sse")],
        clock=clock,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(task.serve)
        # Rounds at 12:00:40, then 12:01:01, 12:02:01, ...: the third one fails.
        await trio.sleep(20.5 + 60)
        store.fail_next = True
        await trio.sleep(60 * 3)
        task.close()
    sampled = sorted({b.minute for b in store.samples if b.series == "sessions"})
    first = _minute(BASE)
    # Every minute but the one whose round failed has its sample.
    assert sampled == [first, first + 1, first + 3, first + 4]
    sessions = [b for b in store.samples if b.series == "sessions" and b.minute == first]
    assert {(b.key, b.value, b.instance_id) for b in sessions} == {("sse", 1.0, "i1")}
    # The first round set the mark a retention back and caught up 6 hours at a time; later
    # ones roll the minute that ended 30 s or more before them: at 12:04:01, 12:02.
    assert store.rolls[0] == (first - 8 * 24 * 60, first - 8 * 24 * 60 + 6 * 60)
    assert store.mark is not None
    assert store.mark.minute == first + 3
    assert store.rolls[-1] == (first + 2, first + 3)
    assert store.forgotten[-1] == first + 4 - 8 * 24 * 60


async def test_a_first_roll_starts_at_the_oldest_row_and_pauses_between_steps(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = FakeStore()
    store.oldest = BASE - timedelta(hours=20)
    task = MinuteRollup(store, "i1", 8, sessions=list, clock=lambda: BASE)
    before = trio.current_time()
    rolled = await task.roll(BASE)
    # From the oldest row's minute to the last settled one, six hours a step: 4 steps,
    # with a pause after each but the last, for the writers waiting on SQLite's lock.
    start = _minute(BASE - timedelta(hours=20))
    assert rolled == _minute(BASE - timedelta(seconds=30)) - start
    assert [r[0] for r in store.rolls] == [start + k * 6 * 60 for k in range(4)]
    assert trio.current_time() - before >= 3 * 0.05

    empty = FakeStore()
    empty.oldest = None
    task = MinuteRollup(empty, "i1", 8, sessions=list, clock=lambda: BASE)
    assert await task.roll(BASE) == 0
    assert empty.rolls == []
    assert empty.mark == RollupMark(minute=_minute(BASE - timedelta(seconds=30)), delivery_id=0)
