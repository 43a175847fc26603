"""Revoking a token with many open sessions: every one of them ends, and no other.

The supervisor closes the sessions a batch at a time, each batch once the
last one's responses have ended (or a bound has passed); whichever way, each
session of the token ends, its stream's reader sees the end, and the
sessions of another token stay open.
"""

from __future__ import annotations

import gc
import weakref
from contextlib import AbstractAsyncContextManager

import trio
import trio.testing

from agentws.doors.mcp.sessions.supervisor import (
    _BATCH_WAIT_S,
    _CANCEL_BATCH,
    McpSession,
    SessionSupervisor,
)
from agentws.settings.config import Settings
from tests.unit.supervisor_support import make_caller, running_supervisor

# More than the supervisor cancels in one batch.
MANY = 450
PATIENCE_S = 30.0


def _supervisor() -> AbstractAsyncContextManager[SessionSupervisor]:
    settings = Settings(mcp_max_sessions=2 * MANY, mcp_max_sessions_per_token=2 * MANY)
    return running_supervisor(settings, "revocation")


async def _read_to_end(session: McpSession, ended: list[int], all_ended: trio.Event) -> None:
    """Read the session's stream to its end, then leave it, as its HTTP response does."""
    connection = session.open_stream()
    assert connection is not None
    async for _ in connection.receive:
        pass
    session.leave(connection)
    ended.append(1)
    if len(ended) == MANY:
        all_ended.set()


async def test_revoking_a_token_ends_all_its_sessions_and_streams_and_no_other() -> None:
    revoked, kept = make_caller("revoked"), make_caller("kept")
    async with _supervisor() as supervisor, trio.open_nursery() as readers:
        sessions = [await supervisor.open(revoked, "sse") for _ in range(MANY)]
        others = [await supervisor.open(kept, "sse") for _ in range(3)]
        streams_ended: list[int] = []
        all_ended = trio.Event()
        for session in [*sessions, *others]:
            readers.start_soon(_read_to_end, session, streams_ended, all_ended)
        await trio.testing.wait_all_tasks_blocked()

        assert supervisor.revoke(revoked.token_id) == MANY
        with trio.fail_after(PATIENCE_S):
            for session in sessions:
                await session.ended.wait()
            await all_ended.wait()
        assert supervisor.sessions_of(revoked.token_id) == []
        assert len(streams_ended) == MANY
        assert all(supervisor.get(s.id) is s and not s.ended.is_set() for s in others)
        assert all(s.stream is not None for s in others)
        readers.cancel_scope.cancel()


async def test_the_collector_waits_while_a_revocations_streams_end(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Full collections would hold up every ending stream: they wait for the last one."""
    revoked, kept = make_caller("revoked"), make_caller("kept")
    assert gc.isenabled()
    async with _supervisor() as supervisor:
        sessions = [await supervisor.open(revoked, "sse") for _ in range(MANY)]
        other = await supervisor.open(kept, "sse")
        connections = [session.open_stream() for session in sessions]
        assert all(c is not None for c in connections)
        _, opened, closed = supervisor.counts()

        supervisor.revoke(revoked.token_id)
        with trio.fail_after(PATIENCE_S):
            for session in sessions:
                await session.ended.wait()
        assert not gc.isenabled()
        # Closed, but not released while a response still reads it.
        assert supervisor.counts() == (1, opened, closed)

        for session, connection in zip(sessions[:-1], connections[:-1], strict=True):
            assert connection is not None
            session.leave(connection)
        other.close()  # another session's end lets nothing go
        assert not gc.isenabled()
        assert supervisor.counts() == (0, opened, closed + MANY)

        last = connections[-1]
        assert last is not None
        sessions[-1].leave(last)
        assert gc.isenabled()
        assert supervisor.counts() == (0, opened, closed + MANY + 1)


async def test_the_collector_waits_no_longer_than_its_bound(
    autojump_clock: trio.testing.MockClock,
) -> None:
    revoked = make_caller("revoked")
    async with _supervisor() as supervisor:
        sessions = [await supervisor.open(revoked, "sse") for _ in range(MANY)]
        connections = [session.open_stream() for session in sessions]
        assert all(c is not None for c in connections)
        supervisor.revoke(revoked.token_id)
        revoked_at = trio.current_time()
        await trio.sleep(29)
        assert not gc.isenabled()
        await trio.sleep(2)
        assert gc.isenabled()
        assert trio.current_time() - revoked_at > 30


async def test_a_revoked_tokens_sessions_are_dropped_once() -> None:
    """A second look at the revoked token, while its sessions still close, finds none to close."""
    revoked = make_caller("revoked")
    async with _supervisor() as supervisor:
        sessions = [await supervisor.open(revoked, "sse") for _ in range(MANY)]
        assert supervisor.revoke(revoked.token_id) == MANY
        # Its sessions are cancelled a batch at a time, in a task of their own:
        # most of them are still open when the revocation is seen again.
        assert not all(session.ended.is_set() for session in sessions)
        assert supervisor.sessions_of(revoked.token_id) == []
        assert supervisor.revoke(revoked.token_id) == 0
        with trio.fail_after(PATIENCE_S):
            for session in sessions:
                await session.ended.wait()
        assert len(supervisor) == 0


async def test_other_tasks_run_while_a_revoked_tokens_sessions_close() -> None:
    """Sessions close a batch at a time: the loop is not held until every stream has ended."""
    revoked = make_caller("revoked")
    async with _supervisor() as supervisor, trio.open_nursery() as readers:
        sessions = [await supervisor.open(revoked, "sse") for _ in range(MANY)]
        streams_ended: list[int] = []
        all_ended = trio.Event()
        for session in sessions:
            readers.start_soon(_read_to_end, session, streams_ended, all_ended)
        await trio.testing.wait_all_tasks_blocked()

        supervisor.revoke(revoked.token_id)
        await trio.lowlevel.checkpoint()
        await trio.lowlevel.checkpoint()
        # This task ran again before the last batch's streams had ended.
        assert 0 < len(streams_ended) < MANY
        with trio.fail_after(PATIENCE_S):
            await all_ended.wait()


async def test_each_batch_waits_for_the_last_ones_responses_to_end(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The loop holds one batch of ending streams at a time; a response that does not end
    holds the next batch back for a bounded time only."""
    revoked = make_caller("revoked")
    async with _supervisor() as supervisor:
        sessions = [await supervisor.open(revoked, "sse") for _ in range(MANY)]
        connections = [session.open_stream() for session in sessions]

        def ended() -> int:
            return sum(session.ended.is_set() for session in sessions)

        supervisor.revoke(revoked.token_id)
        await trio.sleep(0.01)
        assert ended() == _CANCEL_BATCH  # nothing read its streams to their end yet
        # The first batch's responses end: the next batch closes at once.
        for session, connection in zip(sessions, connections, strict=True):
            if session.ended.is_set():
                assert connection is not None
                session.leave(connection)
        await trio.sleep(0.01)
        assert ended() == 2 * _CANCEL_BATCH
        # Nobody ends the second batch's responses: the third waits for the bound.
        await trio.sleep(_BATCH_WAIT_S - 0.1)
        assert ended() == 2 * _CANCEL_BATCH
        await trio.sleep(0.2)
        assert ended() == min(3 * _CANCEL_BATCH, MANY)


async def test_a_batchs_sessions_are_let_go_of_once_its_responses_end(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Not all at once after the last batch: ten thousand ended sessions freed in
    one step held the loop for 30 ms."""
    revoked = make_caller("revoked")
    async with _supervisor() as supervisor:
        opened = [await supervisor.open(revoked, "sse") for _ in range(MANY)]
        connections = [session.open_stream() for session in opened]
        alive = [weakref.ref(session) for session in opened]
        del opened
        left: set[int] = set()

        def leave_ended() -> list[int]:
            """End the responses of the sessions closed so far, as their readers would."""
            ended = []
            for index, ref in enumerate(alive):
                session = ref()
                if index not in left and session is not None and session.ended.is_set():
                    connection = connections[index]
                    assert connection is not None
                    session.leave(connection)
                    ended.append(index)
            left.update(ended)
            return ended

        supervisor.revoke(revoked.token_id)
        await trio.sleep(0.01)
        assert len(leave_ended()) == _CANCEL_BATCH
        await trio.sleep(0.01)  # the second batch closes
        second = leave_ended()
        assert len(second) == _CANCEL_BATCH
        await trio.sleep(0.01)  # the third batch closes; the rest wait for it

        gc.collect()
        assert [index for index in second if alive[index]() is not None] == []
        assert sum(ref() is not None for ref in alive) >= MANY - 3 * _CANCEL_BATCH
