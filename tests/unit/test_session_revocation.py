"""Revoking a token with many open sessions: every one of them ends, and no other.

The supervisor ends the sessions' streams at once and cancels the sessions
themselves a batch at a time; whichever way, each session of the token
ends, its stream's reader sees the end, and the sessions of another token
stay open.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager

import trio
from mcp.server.lowlevel.server import Server

from agentws.changes import ChangeFeed
from agentws.config import Settings
from agentws.domain.models import Group, McpToken, Workspace
from agentws.mcp.auth import Caller
from agentws.mcp.sessions import McpSession, SessionSupervisor

# More than the supervisor cancels in one batch.
MANY = 450
PATIENCE_S = 30.0


def _caller(name: str) -> Caller:
    workspace = Workspace(slug="acme", name="Acme")
    group = Group(workspace_id=workspace.id, slug="ops", name="Ops")
    token = McpToken(group_id=group.id, name=name, token_hash=f"hash-{name}", hint=name)
    return Caller(token=token, group=group, workspace=workspace)


class _TokenStore:
    """The one query the supervisor makes: which tokens are live (all of them, here)."""

    notifies = False

    def data_version(self) -> None:
        return None

    async def live_token_ids(self, token_ids: Collection[str]) -> set[str]:
        return set(token_ids)


@asynccontextmanager
async def _supervisor() -> AsyncIterator[SessionSupervisor]:
    store = _TokenStore()
    settings = Settings(mcp_max_sessions=2 * MANY, mcp_max_sessions_per_token=2 * MANY)
    server: Server[McpSession] = Server("revocation")
    supervisor = SessionSupervisor(
        settings,
        store,  # type: ignore[arg-type]
        server,
        server.create_initialization_options(),
        ChangeFeed(store),  # type: ignore[arg-type]
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.serve)
        yield supervisor
        supervisor.close_all()


async def _read_to_end(
    receive: trio.MemoryReceiveChannel[object], ended: list[int], all_ended: trio.Event
) -> None:
    async for _ in receive:
        pass
    ended.append(1)
    if len(ended) == MANY:
        all_ended.set()


async def test_revoking_a_token_ends_all_its_sessions_and_streams_and_no_other() -> None:
    revoked, kept = _caller("revoked"), _caller("kept")
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
