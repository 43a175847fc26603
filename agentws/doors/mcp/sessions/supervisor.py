"""The supervisor of every MCP session of this process.

Every session (legacy SSE or Streamable HTTP, :mod:`agentws.doors.mcp.sessions.session`) is
served by the SDK's dispatcher and server runner, message by message as the
door receives them (:mod:`agentws.doors.mcp.sessions.dispatcher`): a session has no
task of its own, and its handlers run in the :class:`SessionSupervisor`'s
nursery under cancel scopes the session holds. The supervisor holds the
sessions by id and by token id and runs in the service's root nursery, so
no session outlives the service. Closing a session — revocation, idle
expiry, a stalled reader, ``DELETE``, shutdown — is
:meth:`~agentws.doors.mcp.sessions.session.McpSession.close`: its handlers are cancelled
and every channel its HTTP streams read from is closed, which ends those
responses.
"""

from __future__ import annotations

import gc
import heapq
import logging
from collections import defaultdict
from typing import Any

import attrs
import trio
from mcp.server.lowlevel.server import Server
from mcp.server.models import InitializationOptions

from agentws.common.changes import ChangeFeed, Topic
from agentws.core.errors import OverCapacityError
from agentws.core.logs import add_log_context, log_context
from agentws.domain.models import ApprovalOutcome, Group
from agentws.doors.mcp.sessions.auth import Caller
from agentws.doors.mcp.sessions.dispatcher import SessionServing
from agentws.doors.mcp.sessions.listen import ListenStreams
from agentws.doors.mcp.sessions.rendered import RenderedResults
from agentws.doors.mcp.sessions.replay import Replays
from agentws.doors.mcp.sessions.session import STREAM_BUFFER, McpSession, Transport, new_session_id
from agentws.doors.mcp.sessions.teardowns import TeardownHold
from agentws.settings.config import Settings
from agentws.store.sql_tokens import TokenStore

__all__ = ["STREAM_BUFFER", "McpSession", "SessionSupervisor", "Transport"]

log = logging.getLogger("agentws.mcp")

# Revocations made by another process (the CLI, another instance) reach open
# sessions this fast when no change feed announces them (SQLite, a lost listener).
_REVOCATION_POLL_S = 0.25
# After a check for revoked tokens, this many times its duration passes before
# the next (at most _REVOCATION_POLL_S).
_CHECK_SHARE = 4
# Sessions of a revoked token closed at once; the next batch waits until
# this one's responses have ended (or _BATCH_WAIT_S has passed), so the loop
# never holds more than a batch of ending streams and other requests (a
# health check, another client's call) wait for one batch at most.
_CANCEL_BATCH = 100
_BATCH_WAIT_S = 0.5
# Once every stream has ended, the responses of a mass close and the
# connections their clients hung up unwind this many sessions' worth at a
# time: each unwinding costs the loop more than its stream's end did.
_UNWIND_BATCH = _CANCEL_BATCH // 4
# Closing more sessions than this at once holds the cycle collector back until
# their responses have ended, for this long at most.
_HOLD_COLLECTOR_FROM = _CANCEL_BATCH
_HOLD_COLLECTOR_S = 30.0


@attrs.define(eq=False)
class SessionSupervisor:
    """Owner of every MCP session of this process.

    Resource handling:
        :meth:`serve` runs in the service's nursery and holds the nursery the
        sessions' handlers run in; when it is cancelled, every handler is
        cancelled with it. :meth:`close_all` ends every session at once
        (shutdown).
    """

    settings: Settings
    store: TokenStore
    server: Server[McpSession]
    init_options: InitializationOptions
    #: Announces revocations made anywhere; without it (or while it is deaf) the store is polled.
    changes: ChangeFeed
    rendered: RenderedResults = attrs.field(factory=RenderedResults)
    #: The stateless revision's listen streams: told of outcomes too, closed with the rest.
    listens: ListenStreams = attrs.field(factory=ListenStreams)
    _sessions: dict[str, McpSession] = attrs.field(factory=dict, init=False)
    _by_token: defaultdict[str, set[str]] = attrs.field(
        factory=lambda: defaultdict(set), init=False
    )
    #: Open sessions by group id (the list-changed watch reads them).
    _by_group: defaultdict[str, set[str]] = attrs.field(
        factory=lambda: defaultdict(set), init=False
    )
    _nursery: trio.Nursery | None = attrs.field(default=None, init=False)
    _closing: trio.Event = attrs.field(factory=trio.Event, init=False)
    _draining: bool = attrs.field(default=False, init=False)
    #: Set when the last open session has ended; a new one replaces it.
    _emptied: trio.Event = attrs.field(factory=trio.Event, init=False)
    #: Sessions opened and closed since the start (the collector's steward reads them).
    opened_total: int = attrs.field(default=0, init=False)
    closed_total: int = attrs.field(default=0, init=False)
    #: ``(when it may have been idle long enough, session id)``, a heap.
    _expiries: list[tuple[float, str]] = attrs.field(factory=list, init=False)
    _expiry_added: trio.Event = attrs.field(factory=trio.Event, init=False)
    #: Ids of the sessions that queued a call and wait for its outcome (some may be closed).
    _waiting: set[str] = attrs.field(factory=set, init=False)
    #: Closed sessions whose responses are still ending while the collector is held.
    _ending: set[str] = attrs.field(factory=set, init=False)
    #: The deadline of the hold on the collector, while there is one.
    _hold: trio.CancelScope | None = attrs.field(default=None, init=False)
    #: Sessions of a revocation closing a batch at a time whose responses are
    #: ending, by id: the batch each belongs to.
    _batches: dict[str, _Batch] = attrs.field(factory=dict, init=False)

    async def serve(
        self, *, task_status: trio.TaskStatus[SessionSupervisor] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run sessions and watch for revoked tokens until :meth:`close_all` (or cancelled)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._watch_revocations)
            nursery.start_soon(self._expire_idle_sessions)
            task_status.started(self)
            try:
                await self._closing.wait()
            finally:
                self._let_collector_go()
            nursery.cancel_scope.cancel()

    def __len__(self) -> int:
        return len(self._sessions)

    def counts(self) -> tuple[int, int, int]:
        """Sessions open, opened so far, closed so far (once their responses have ended)."""
        return len(self._sessions), self.opened_total, self.closed_total

    def get(self, session_id: str) -> McpSession | None:
        return self._sessions.get(session_id)

    def all(self) -> list[McpSession]:
        """Every open session of this process."""
        return list(self._sessions.values())

    def _waiting_sessions(self) -> list[McpSession]:
        """The open sessions waiting to hear of an approval (the rest are dropped from the set)."""
        waiting = []
        for session_id in list(self._waiting):
            session = self._sessions.get(session_id)
            if session is None or not session.awaiting:
                self._waiting.discard(session_id)
            else:
                waiting.append(session)
        return waiting

    def _awaits(self, session: McpSession) -> None:
        self._waiting.add(session.id)

    def awaited(self) -> set[str]:
        """Approval requests some open session waits to hear about."""
        # Asked four times a second: the sessions that wait, not all ten thousand open.
        waited = {a for session in self._waiting_sessions() for a in session.awaiting}
        return waited | self.listens.awaited()

    def forget(self, approval_id: str) -> None:
        """No session waits for ``approval_id`` any more (it no longer exists)."""
        for session in self._waiting_sessions():
            session.awaiting.pop(approval_id, None)

    async def deliver(self, approval: ApprovalOutcome, data: dict[str, Any]) -> int:
        """Tell every open session waiting for ``approval`` its outcome; how many were told."""
        told = self.listens.deliver(approval)
        for session in self._waiting_sessions():
            if approval.id in session.awaiting and await session.tell_outcome(approval, data):
                told += 1
        return told

    def groups(self) -> dict[str, Group]:
        """The groups with sessions open, by id."""
        return {
            group_id: self._sessions[next(iter(held))].caller.group
            for group_id, held in self._by_group.items()
        }

    def sessions_of_group(self, group_id: str) -> list[McpSession]:
        return [self._sessions[s] for s in self._by_group.get(group_id, ())]

    def _index_group(self, session: McpSession) -> None:
        self._by_group[session.caller.group.id].add(session.id)

    def _unindex_group(self, session: McpSession) -> None:
        group_id = session.caller.group.id
        held = self._by_group.get(group_id)
        if held is not None:
            held.discard(session.id)
            if not held:
                del self._by_group[group_id]

    def sessions_of(self, token_id: str) -> list[McpSession]:
        return [self._sessions[s] for s in self._by_token.get(token_id, ())]

    async def open(self, caller: Caller, transport: Transport) -> McpSession:
        """Start a session for ``caller`` and return it, running.

        Error handling:
            :class:`~agentws.core.errors.OverCapacityError` when the process or the
            token is at its session limit, or the service is shutting down.
        """
        if self._nursery is None or self._closing.is_set():
            raise OverCapacityError("the server is shutting down", retry_after_s=5)
        if self._draining:
            raise OverCapacityError(
                "this instance is draining: it finishes its sessions but takes no new one; "
                "connect again (another instance takes it)",
                retry_after_s=1,
            )
        if len(self._sessions) >= self.settings.mcp_max_sessions:
            raise OverCapacityError(
                f"this server has {len(self._sessions)} open MCP sessions, its limit "
                "(AGENTWS_MCP_MAX_SESSIONS); close idle clients or retry later",
                retry_after_s=10,
            )
        if len(self._by_token.get(caller.token_id, ())) >= self.settings.mcp_max_sessions_per_token:
            raise OverCapacityError(
                f"this token has {self.settings.mcp_max_sessions_per_token} open sessions, its "
                "limit (AGENTWS_MCP_MAX_SESSIONS_PER_TOKEN); close unused sessions or retry later",
                retry_after_s=10,
            )
        session = McpSession(
            id=new_session_id(self.settings.instance_id),
            caller=caller,
            transport=transport,
            stall_s=self.settings.sse_stall_s,
            replays=Replays(self.settings.mcp_replay_events, self.settings.mcp_replay_s),
            rendered=self.rendered,
            on_close=self._closed,
            on_released=self._released,
            on_awaiting=self._awaits,
        )
        session.serving = SessionServing(
            self.server,
            session,
            self.init_options,
            session,
            self._nursery,
            session_id=session.id,
            failed=session.close,
        )
        self._sessions[session.id] = session
        self.opened_total += 1
        if self._emptied.is_set():
            self._emptied = trio.Event()
        self._by_token[session.token_id].add(session.id)
        self._index_group(session)
        self._expire_later(session)
        # The request opening it, and the handlers its messages start, log its id.
        add_log_context(
            workspace=caller.workspace.slug, group=caller.group.slug, session=session.id
        )
        log.info(
            "session %s opened (%s) for token %s", session.id, session.transport, session.token_id
        )
        await trio.lowlevel.checkpoint()
        return session

    def _released(self, session: McpSession) -> None:
        """A closed session's responses have all ended: nothing of it runs any more."""
        self.closed_total += 1
        batch = self._batches.pop(session.id, None)
        if batch is not None:
            batch.ended(session.id)
        if self._hold is not None:
            self._ending.discard(session.id)
            if not self._ending:
                self._let_collector_go()

    def _closed(self, session: McpSession) -> None:
        """A session has closed: forget it."""
        if self._sessions.pop(session.id, None) is None:
            return
        if not self._sessions:
            self._emptied.set()
        self._unindex_group(session)
        token_sessions = self._by_token.get(session.token_id)
        if token_sessions is not None:
            token_sessions.discard(session.id)
            if not token_sessions:
                del self._by_token[session.token_id]
        if log.isEnabledFor(logging.INFO):  # ten thousand closed at once: no context for nothing
            caller = session.caller
            with log_context(
                workspace=caller.workspace.slug, group=caller.group.slug, session=session.id
            ):
                log.info("session %s closed", session.id)

    def adopt(self, session: McpSession, caller: Caller) -> None:
        """Let ``caller`` (the same OAuth client's newer token) hold ``session`` from now on.

        A refreshed or stepped-up access token continues the client's session, at its
        own scope; revoking that token (its consent) closes the session.
        """
        held = self._by_token.get(session.token_id)
        if held is not None:
            held.discard(session.id)
            if not held:
                del self._by_token[session.token_id]
        self._unindex_group(session)
        session.caller = caller
        self._by_token[caller.token_id].add(session.id)
        self._index_group(session)

    def revoke(self, token_id: str) -> int:
        """Close every session of a token; how many there were."""
        # Forgotten as a token at once: its sessions close a batch at a time,
        # and the next check for revoked tokens must not close them again.
        sessions = [self._sessions[s] for s in self._by_token.pop(token_id, ())]
        if sessions:
            self._close_many(sessions)
            log.info("token %s revoked: closed %d session(s)", token_id, len(sessions))
        return len(sessions)

    def _close_many(self, sessions: list[McpSession]) -> None:
        # A batch at a time: each session's streams end and its handlers are
        # cancelled; the next batch waits until this one's responses have
        # ended. Ten thousand streams woken at once would hold every other
        # request up (a health check, another client's call) until the last
        # had ended.
        if len(sessions) > _HOLD_COLLECTOR_FROM:
            self._hold_collector(sessions)
        if self._nursery is None or len(sessions) <= _CANCEL_BATCH:
            _close_batch(sessions)  # nothing else runs (not serving), or one batch
            return
        for session in sessions:
            session.closing = True
        first = self._batch(sessions[:_CANCEL_BATCH])
        self._nursery.start_soon(self._close_in_batches, first, sessions[_CANCEL_BATCH:])

    def _batch(self, sessions: list[McpSession]) -> _Batch:
        """Close ``sessions``; the batch is done once each one's responses have ended.

        The handlers of those responses then wait at the batch's holds until
        every batch's have ended (:mod:`agentws.doors.mcp.sessions.teardowns`).
        """
        batch = _Batch({session.id for session in sessions if not session.ended.is_set()})
        for session_id in batch.ids:
            self._batches[session_id] = batch
        for start in range(0, len(sessions), _UNWIND_BATCH):
            hold = TeardownHold()
            batch.holds.append(hold)
            for session in sessions[start : start + _UNWIND_BATCH]:
                session.teardown_hold = hold
        _close_batch(sessions)  # a session nothing reads is released at once
        return batch

    def _hold_collector(self, sessions: list[McpSession]) -> None:
        """Hold the cycle collector's automatic passes until ``sessions``' responses end.

        Thousands of streams ending at once allocate enough to start full
        passes of the collector, each of which holds every ending stream up.
        Meanwhile their objects are freed as usual, by reference counting: a
        closed session and its connection leave no reference cycle (the
        collector's steward, :mod:`agentws.http.collector`, reclaims any
        that another part leaves, later).
        """
        if self._nursery is None:
            return
        if self._hold is None:
            if not gc.isenabled():
                return  # someone else holds it: not ours to give back
            gc.disable()
            self._hold = trio.CancelScope(deadline=trio.current_time() + _HOLD_COLLECTOR_S)
            self._nursery.start_soon(self._hold_until, self._hold)
        self._ending.update(session.id for session in sessions)

    async def _hold_until(self, hold: trio.CancelScope) -> None:
        with hold:
            await trio.sleep_forever()
        if hold is self._hold:
            log.warning(
                "sessions still ending after %g s: collector running again", _HOLD_COLLECTOR_S
            )
            self._let_collector_go()

    def _let_collector_go(self) -> None:
        hold, self._hold = self._hold, None
        self._ending.clear()
        if hold is not None:
            hold.cancel()
            gc.enable()

    async def _close_in_batches(self, batch: _Batch, rest: list[McpSession]) -> None:
        # Each session is taken off the list as its batch closes, so the last
        # reference to it goes once its responses have unwound: held here to the
        # end, 10,000 ended sessions were freed in one step, which held the loop 30 ms.
        holds = [*batch.holds]
        try:
            rest.reverse()
            while rest:
                await self._ended(batch)
                batch = self._batch([rest.pop() for _ in range(min(_CANCEL_BATCH, len(rest)))])
                holds.extend(batch.holds)
            await self._ended(batch)
            # Every stream has ended: the responses unwind, a hold's worth at a time.
            for hold in holds:
                await hold.let_go(_BATCH_WAIT_S)
        finally:
            for hold in holds:
                hold.open()  # cancelled (shutdown): no handler waits for a turn

    async def _ended(self, batch: _Batch) -> None:
        """Return once ``batch``'s responses have ended, or after ``_BATCH_WAIT_S``."""
        with trio.move_on_after(_BATCH_WAIT_S):
            await batch.done.wait()
        batch.forget(self._batches)  # a response slow to end is not waited for again

    def drain(self) -> None:
        """Take no new session; the open ones go on (see :meth:`wait_until_empty`)."""
        self._draining = True

    async def wait_until_empty(self) -> None:
        """Return once no session is open (a draining instance waits for its clients)."""
        if self._sessions:
            await self._emptied.wait()

    def close_all(self) -> None:
        """Refuse new sessions and close every open one (shutdown)."""
        self._closing.set()
        self.listens.close()
        for session in list(self._sessions.values()):
            session.close()

    def _expire_later(self, session: McpSession) -> None:
        """Have the session looked at once it may have been idle for ``mcp_idle_s``."""
        due = session.last_active + self.settings.mcp_idle_s
        # A new session is due no earlier than any other: only an empty heap needs a wake.
        heapq.heappush(self._expiries, (due, session.id))
        self._expiry_added.set()

    async def _expire_idle_sessions(self) -> None:
        """Close each session idle for ``mcp_idle_s``: one timer for all of them.

        The heap holds session ids by when each may expire; a session found
        active since (or busy: a stream open, a request in flight) goes back
        in at its new time, an ended one is dropped.
        """
        idle_s = self.settings.mcp_idle_s
        while True:
            if not self._expiries:
                self._expiry_added = trio.Event()
                await self._expiry_added.wait()
                continue
            due, session_id = self._expiries[0]
            now = trio.current_time()
            if due > now:
                await trio.sleep_until(due)
                continue
            heapq.heappop(self._expiries)
            session = self._sessions.get(session_id)
            if session is None:
                continue
            if session.busy:
                session.last_active = now
            if session.last_active + idle_s <= now:
                log.info("session %s expired after %g s idle", session.id, idle_s)
                session.close()
            else:
                heapq.heappush(self._expiries, (session.last_active + idle_s, session_id))

    async def _watch_revocations(self) -> None:
        seen = self.changes.generation(Topic.TOKENS)
        # Where nothing announces a revocation (SQLite), any commit may be one.
        commits = self.changes.commits()
        failed = False
        while True:
            if not failed:  # a check that failed is made again, whatever came since
                await self.changes.wait(
                    Topic.TOKENS, seen, poll_s=_REVOCATION_POLL_S, commits=commits
                )
            failed = False
            # What the check below reads covers what was announced or committed
            # up to here; anything after wakes the next wait at once. (Taken
            # after the check, a revocation committed while it read waited for
            # an unrelated commit, or 10 s.)
            seen = self.changes.generation(Topic.TOKENS)
            commits = self.changes.commits()
            if not self._by_token:
                continue
            held = list(self._by_token)
            started = trio.current_time()
            try:
                live = await self.store.live_token_ids(held)
            except Exception:
                log.exception("cannot check for revoked tokens; retrying")
                await trio.sleep(_REVOCATION_POLL_S)
                failed = True
                continue
            for token_id in held:
                if token_id not in live:
                    self.revoke(token_id)
            # Commits may come faster than checks are worth making: the
            # checks take a small share of the time however many tokens, and
            # a slow one (a busy store) delays the next by a poll at most.
            took = trio.current_time() - started
            await trio.sleep(min(_CHECK_SHARE * took, _REVOCATION_POLL_S))


@attrs.define(eq=False)
class _Batch:
    """Sessions closed together, whose responses have not all ended yet."""

    ids: set[str]
    done: trio.Event = attrs.field(factory=trio.Event)
    #: Where the batch's ended responses wait before they unwind (each hold,
    #: ``_UNWIND_BATCH`` sessions' worth).
    holds: list[TeardownHold] = attrs.field(factory=list)

    def __attrs_post_init__(self) -> None:
        if not self.ids:
            self.done.set()

    def ended(self, session_id: str) -> None:
        self.ids.discard(session_id)
        if not self.ids:
            self.done.set()

    def forget(self, batches: dict[str, _Batch]) -> None:
        """No longer wait for the sessions still ending (drop them from ``batches``)."""
        for session_id in self.ids:
            if batches.get(session_id) is self:
                del batches[session_id]
        self.ids.clear()


def _close_batch(sessions: list[McpSession]) -> None:
    """End the sessions' streams first (what their clients see), then close the sessions."""
    for session in sessions:
        session.replays.close()
    for session in sessions:
        session.close()
