"""A revocation committed while the supervisor checks for revoked tokens is not missed,
nor one a failed check did not see.

On SQLite no notification announces a revocation: the supervisor checks the
open sessions' tokens whenever a commit is seen. A commit that lands while
a check is reading (the check's answer predates it) must wake the next
check at once, not wait for some later, unrelated commit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager

import trio
import trio.testing
from mcp.server.lowlevel.server import Server

from agentws.common.changes import SAFETY_POLL_S, ChangeFeed
from agentws.doors.mcp.sessions.supervisor import McpSession, SessionSupervisor
from agentws.settings.config import Settings
from tests.unit.store_fakes import UnusedChanges, UnusedTokens
from tests.unit.supervisor_support import make_caller

# How long the check takes: long enough for the commit watcher to count the
# commit that lands meanwhile.
CHECK_S = 0.2


class RacingTokens(UnusedTokens, UnusedChanges):
    """SQLite's side, as the supervisor sees it: a data version, and the live tokens.

    Revoking (:meth:`revoke_during_next_check`) commits in the middle of the
    next check, which still answers as of before.
    """

    def __init__(self) -> None:
        self.version = 1
        self.revoked: set[str] = set()
        self._revoke_next: str | None = None
        self.revoked_at: float | None = None
        self.fail_next = False

    @property
    def notifies(self) -> bool:
        return False

    def data_version(self) -> int | None:
        return self.version

    def revoke_during_next_check(self, token_id: str) -> None:
        self._revoke_next = token_id
        self.version += 1  # some commit, which starts a check

    def revoke(self, token_id: str) -> None:
        self.revoked.add(token_id)
        self.version += 1
        self.revoked_at = trio.current_time()

    async def live_token_ids(self, token_ids: Collection[str]) -> set[str]:
        if self.fail_next:
            self.fail_next = False
            raise OSError("database is locked")
        live = set(token_ids) - self.revoked
        if self._revoke_next is not None:
            self.revoke(self._revoke_next)  # its commit lands after this check read
            self._revoke_next = None
        await trio.sleep(CHECK_S)
        return live


@asynccontextmanager
async def _watching(store: RacingTokens) -> AsyncIterator[SessionSupervisor]:
    """A supervisor watching for revocations in ``store``, with SQLite's commit watch."""
    server: Server[McpSession] = Server("revocation-watch")
    changes = ChangeFeed(store)
    supervisor = SessionSupervisor(
        Settings(), store, server, server.create_initialization_options(), changes
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(changes.serve)
        await nursery.start(supervisor.serve)
        yield supervisor
        supervisor.close_all()
        nursery.cancel_scope.cancel()


async def _revocation_delay(revoke: Callable[[RacingTokens, str], None]) -> float:
    """How long after ``revoke`` committed its revocation the token's open session closed."""
    store = RacingTokens()
    caller = make_caller("revoked")
    async with _watching(store) as supervisor:
        session = await supervisor.open(caller, "sse")
        await trio.sleep(1)
        revoke(store, caller.token_id)
        with trio.fail_after(2 * SAFETY_POLL_S):
            await session.ended.wait()
        closed_at = trio.current_time()
    assert store.revoked_at is not None
    return closed_at - store.revoked_at


async def test_a_revocation_committed_during_a_check_is_seen_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    assert await _revocation_delay(RacingTokens.revoke_during_next_check) < 1.0


async def test_a_check_that_failed_is_made_again_without_waiting_for_a_commit(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def fail_then_revoke(store: RacingTokens, token_id: str) -> None:
        store.fail_next = True
        store.revoke(token_id)

    assert await _revocation_delay(fail_then_revoke) < 1.0
