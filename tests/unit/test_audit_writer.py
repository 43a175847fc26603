"""AuditWriter: tool-call entries gather in batches, one commit each, and none is lost at close.

The clock here does not move unless a test moves it (``mock_clock``), so a
batch written before the flush interval ends was written because it was full.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import trio
import trio.testing

from agentws.common.audit import _BATCH, _FLUSH_S, AuditWriter
from agentws.domain.models import AuditEntry
from agentws.store import SqlStore, open_store

# How long a test waits for the writer thread's commit (real time: the clock stands still).
_COMMIT_WAIT_S = 10.0


@pytest.fixture
def mock_clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(rate=0)


def entry(n: int) -> AuditEntry:
    return AuditEntry(actor="mcp:tok_x", action="tool.call", target=f"t{n}", detail={"n": n})


async def written(writer: AuditWriter, count: int) -> None:
    deadline = time.monotonic() + _COMMIT_WAIT_S
    while writer.written < count:
        assert time.monotonic() < deadline, f"{writer.written} of {count} entries written"
        await trio.lowlevel.checkpoint()


async def stored(store: SqlStore) -> int:
    return await store.count(AuditEntry)


async def test_entries_wait_for_the_flush_interval_then_share_a_commit(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'a.db'}") as store:
        writer = AuditWriter(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(writer.serve)
            for n in range(3):
                await writer.append(entry(n))
            await trio.testing.wait_all_tasks_blocked()
            assert writer.written == 0  # the batch waits for the interval
            mock_clock.jump(_FLUSH_S)
            await written(writer, 3)
            assert await stored(store) == 3
            writer.close()


async def test_a_whole_batch_is_written_without_waiting_for_the_interval(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'a.db'}") as store:
        writer = AuditWriter(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(writer.serve)
            for n in range(_BATCH + 1):
                await writer.append(entry(n))
            await written(writer, _BATCH)
            await trio.testing.wait_all_tasks_blocked()
            assert writer.written == _BATCH  # the one after waits for the next batch
            mock_clock.jump(_FLUSH_S)
            await written(writer, _BATCH + 1)
            writer.close()
        assert await stored(store) == _BATCH + 1


async def test_close_writes_what_is_queued_and_later_entries_directly(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'a.db'}") as store:
        writer = AuditWriter(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(writer.serve)
            await writer.append(entry(1))
            await writer.append(entry(2))
            writer.close()  # serve returns once they are written
        assert writer.written == 2
        await writer.append(entry(3))
        assert await stored(store) == 3
