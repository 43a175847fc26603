"""A mass close ends every stream before any of its responses unwinds, then unwinds them a
batch at a time; stopping the supervisor lets every held response go."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

import trio
import trio.testing

from agentws.doors.mcp.sessions.supervisor import (
    _CANCEL_BATCH,
    McpSession,
    SessionSupervisor,
)
from agentws.doors.mcp.sessions.teardowns import TeardownHold
from agentws.settings.config import Settings
from tests.unit.supervisor_support import make_caller, running_supervisor

# Three batches and a part.
MANY = 3 * _CANCEL_BATCH + 50
PATIENCE_S = 30.0


def _supervisor() -> AbstractAsyncContextManager[SessionSupervisor]:
    settings = Settings(mcp_max_sessions=2 * MANY, mcp_max_sessions_per_token=2 * MANY)
    return running_supervisor(settings, "teardown-holds")


class _Log(list[tuple[str, TeardownHold | None]]):
    """What the responses did, in order: a stream ended, a response unwound (and its hold)."""

    def __init__(self) -> None:
        super().__init__()
        self._grew = trio.Event()

    def add(self, kind: str, session: McpSession) -> None:
        self.append((kind, session.teardown_hold))
        self._grew.set()

    async def reaching(self, count: int) -> None:
        while len(self) < count:
            self._grew = trio.Event()
            await self._grew.wait()


async def _respond(session: McpSession, log: _Log) -> None:
    """What a stream's HTTP response does: read it to its end, leave, wait its turn, unwind."""
    connection = session.open_stream()
    assert connection is not None
    async for _ in connection.receive:
        pass
    session.leave(connection)
    log.add("ended", session)
    await session.teardown_turn()
    log.add("unwound", session)


async def _revoked_with_responses(count: int) -> _Log:
    """Revoke a token whose ``count`` sessions each have a stream's response; what they did."""
    revoked = make_caller("revoked")
    log = _Log()
    async with _supervisor() as supervisor, trio.open_nursery() as responses:
        for _ in range(count):
            responses.start_soon(_respond, await supervisor.open(revoked, "sse"), log)
        await trio.testing.wait_all_tasks_blocked()
        assert supervisor.revoke(revoked.token_id) == count
        with trio.fail_after(PATIENCE_S):
            await log.reaching(2 * count)
    return log


async def test_every_stream_of_a_mass_close_ends_before_any_response_unwinds() -> None:
    log = await _revoked_with_responses(MANY)

    assert [kind for kind, _ in log] == ["ended"] * MANY + ["unwound"] * MANY
    # A batch's responses unwind together, one batch after another.
    unwound = [hold for _, hold in log[MANY:]]
    batches = [hold for i, hold in enumerate(unwound) if i == 0 or hold is not unwound[i - 1]]
    assert len(batches) == len(set(map(id, batches))) == -(-MANY // _CANCEL_BATCH)
    assert all(hold is not None for hold in batches)


async def test_a_small_close_holds_nothing() -> None:
    """One batch ends at once, in the turn of its close: nothing to put its teardown after."""
    log = await _revoked_with_responses(_CANCEL_BATCH)
    assert {hold for _, hold in log} == {None}


async def test_stopping_the_supervisor_lets_every_held_response_go(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Its close cancelled mid-way (shutdown), no response waits for a turn that never comes."""
    revoked = make_caller("revoked")
    log = _Log()
    async with trio.open_nursery() as responses:
        async with _supervisor() as supervisor:
            for _ in range(MANY):
                await supervisor.open(revoked, "sse")
            # The order the close takes them in: the first batch's streams are read
            # to their end, the others' never (each later batch waits out its bound).
            order = supervisor.sessions_of(revoked.token_id)
            unread = [session.open_stream() for session in order[_CANCEL_BATCH:]]
            assert None not in unread
            for session in order[:_CANCEL_BATCH]:
                responses.start_soon(_respond, session, log)
            await trio.testing.wait_all_tasks_blocked()

            supervisor.revoke(revoked.token_id)
            await trio.sleep(0.1)
            assert [kind for kind, _ in log] == ["ended"] * _CANCEL_BATCH
        with trio.fail_after(PATIENCE_S):
            await log.reaching(2 * _CANCEL_BATCH)
    assert [kind for kind, _ in log[_CANCEL_BATCH:]] == ["unwound"] * _CANCEL_BATCH
