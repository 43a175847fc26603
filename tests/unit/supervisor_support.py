"""A session supervisor run on its own, for the unit tests of its timers and revocations."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager

import trio
from mcp.server.lowlevel.server import Server

from agentws.common.changes import ChangeFeed
from agentws.domain.models import Group, McpToken, Workspace
from agentws.doors.mcp.sessions.auth import Caller
from agentws.doors.mcp.sessions.supervisor import McpSession, SessionSupervisor
from agentws.settings.config import Settings
from tests.unit.store_fakes import UnusedChanges, UnusedTokens


def make_caller(name: str = "tests") -> Caller:
    """A caller with a token called ``name`` for group acme/ops."""
    workspace = Workspace(slug="acme", name="Acme")
    group = Group(workspace_id=workspace.id, slug="ops", name="Ops")
    token = McpToken(group_id=group.id, name=name, token_hash=f"hash-{name}", hint=name)
    return Caller(token=token, group=group, workspace=workspace)


class LiveTokens(UnusedTokens, UnusedChanges):
    """The one query the supervisor makes: which tokens are live (every one, here); its
    change feed, which cannot listen, polls a data version that is never known."""

    @property
    def notifies(self) -> bool:
        return False

    def data_version(self) -> int | None:
        return None

    async def live_token_ids(self, token_ids: Collection[str]) -> set[str]:
        return set(token_ids)


@asynccontextmanager
async def running_supervisor(settings: Settings, name: str) -> AsyncIterator[SessionSupervisor]:
    """A supervisor serving until the block ends, then closing every session."""
    store = LiveTokens()
    server: Server[McpSession] = Server(name)
    supervisor = SessionSupervisor(
        settings,
        store,
        server,
        server.create_initialization_options(),
        ChangeFeed(store),
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.serve)
        yield supervisor
        supervisor.close_all()
