"""Revoking a token with many open sessions: every one of them ends, and no other.

The supervisor ends the sessions' streams at once and cancels the sessions
themselves a batch at a time; whichever way, each session of the token
ends, its stream's reader sees the end, and the sessions of another token
stay open.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

import trio

from agentws.config import Settings
from agentws.mcp.sessions import SessionSupervisor
from tests.unit.supervisor_support import make_caller, running_supervisor

# More than the supervisor cancels in one batch.
MANY = 450
PATIENCE_S = 30.0


def _supervisor() -> AbstractAsyncContextManager[SessionSupervisor]:
    settings = Settings(mcp_max_sessions=2 * MANY, mcp_max_sessions_per_token=2 * MANY)
    return running_supervisor(settings, "revocation")


async def _read_to_end(
    receive: trio.MemoryReceiveChannel[object], ended: list[int], all_ended: trio.Event
) -> None:
    async for _ in receive:
        pass
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
            connection = session.open_stream()
            assert connection is not None
            readers.start_soon(_read_to_end, connection.receive, streams_ended, all_ended)

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
