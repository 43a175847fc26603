"""One task beats for every call that runs in its request: on time, never after, never stuck.

Timers on ``autojump_clock``: a beat's time is exactly when it was due.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

from agentws.doors.mcp.relay.beats import Beats


@asynccontextmanager
async def beats() -> AsyncIterator[Beats]:
    process = Beats()
    async with trio.open_nursery() as nursery:
        await nursery.start(process.serve)
        yield process
        nursery.cancel_scope.cancel()


class Heard:
    def __init__(self, name: str, log: list[tuple[str, float]]) -> None:
        self.name, self.log = name, log

    async def beat(self) -> None:
        self.log.append((self.name, trio.current_time()))


async def _runs_for(seconds: float) -> str:
    await trio.sleep(seconds)
    return "done"


async def test_calls_beat_each_interval_they_run_and_never_after(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[tuple[str, float]] = []
    async with beats() as process, trio.open_nursery() as nursery:
        start = trio.current_time()
        nursery.start_soon(process.beating, _runs_for(35), 10.0, Heard("slow", log).beat)
        await trio.sleep(3)
        # A shorter interval, registered later, is due first: the task wakes for it.
        nursery.start_soon(process.beating, _runs_for(9), 2.0, Heard("short", log).beat)
        nursery.start_soon(process.beating, _runs_for(5), 10.0, Heard("quick", log).beat)
        await trio.sleep(60)
    assert [(name, at - start) for name, at in log] == [
        ("short", 5),
        ("short", 7),
        ("short", 9),
        ("slow", 10),
        ("short", 11),
        ("slow", 20),
        ("slow", 30),
    ]


async def test_the_outcome_is_the_works_own(autojump_clock: trio.testing.MockClock) -> None:
    async def fails() -> None:
        await trio.sleep(12)
        raise LookupError("no such repository")

    log: list[tuple[str, float]] = []
    async with beats() as process:
        assert await process.beating(_runs_for(1), 5.0, Heard("a", log).beat) == "done"
        with pytest.raises(LookupError, match="no such repository"):
            await process.beating(fails(), 5.0, Heard("b", log).beat)
    assert [name for name, _ in log] == ["b", "b"]


async def test_a_beat_that_fails_stops_no_other(autojump_clock: trio.testing.MockClock) -> None:
    async def broken() -> None:
        raise ConnectionResetError("the client is gone")

    log: list[tuple[str, float]] = []
    async with beats() as process, trio.open_nursery() as nursery:
        nursery.start_soon(process.beating, _runs_for(25), 10.0, broken)
        nursery.start_soon(process.beating, _runs_for(25), 10.0, Heard("ok", log).beat)
    assert [name for name, _ in log] == ["ok", "ok"]


async def test_a_beat_the_client_is_slow_to_take_is_not_doubled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    sent: list[float] = []

    async def slow_beat() -> None:
        sent.append(trio.current_time())
        await trio.sleep(25)  # a client that reads slowly

    async with beats() as process:
        start = trio.current_time()
        await process.beating(_runs_for(45), 10.0, slow_beat)
    # Due at 10, 20, 30, 40: those at 20 and 30 come while the first is being sent.
    assert [at - start for at in sent] == [10, 40]


async def test_calls_that_ended_leave_the_queue(autojump_clock: trio.testing.MockClock) -> None:
    async with beats() as process:
        for _ in range(1000):
            await process.beating(_runs_for(0.001), 15.0, Heard("x", []).beat)
        assert len(process) <= 1


async def test_without_the_task_a_call_runs_unbeaten(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[tuple[str, float]] = []
    assert await Beats().beating(_runs_for(30), 10.0, Heard("a", log).beat) == "done"
    assert log == []
