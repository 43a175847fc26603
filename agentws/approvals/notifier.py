"""Telling callers what became of their queued calls, and expiring requests whose time is up.

:class:`ApprovalWatch` runs in the service's nursery. A decision may be made
by any process (the CLI, another instance, the dashboard), so the watch
reads the store whenever the change feed announces a decided request (on
PostgreSQL), and every ``_POLL_S`` otherwise, looking at the requests some
open session of this process is waiting on, and hands each finished one to the
:class:`OutcomeListener` (the MCP session supervisor), which sends the
outcome to the sessions that asked. Every ``_EXPIRE_S`` it expires pending
requests past their time, which are then reported like any other outcome.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import attrs
import trio

from agentws.approvals.decisions import expire_due
from agentws.common.changes import ChangeFeed, Topic
from agentws.core.errors import StoreError
from agentws.domain.models import ApprovalOutcome, ApprovalStatus
from agentws.domain.rules import utcnow
from agentws.store.sql_approval_decisions import ApprovalDecisionStore
from agentws.store.sql_records import RecordStore
from agentws.tools.approval_queue import outcome_data

__all__ = ["ACTOR", "ApprovalWatch", "OutcomeListener"]

log = logging.getLogger("agentws.approvals")

#: Who the audit log says expired a request.
ACTOR = "system:approvals"

# A decision made anywhere reaches the caller's open session this fast.
_POLL_S = 0.25
# Pending requests past their time are marked expired this often.
_EXPIRE_S = 5.0


class _Store(RecordStore, ApprovalDecisionStore, Protocol):
    """The areas of the store this module uses."""


class OutcomeListener(Protocol):
    def awaited(self) -> set[str]:
        """Ids of requests someone here waits to hear about."""
        ...

    async def deliver(self, approval: ApprovalOutcome, data: dict[str, Any]) -> int:
        """Tell whoever waits for ``approval`` its outcome."""
        ...

    def forget(self, approval_id: str) -> None:
        """Stop waiting for a request that no longer exists."""
        ...


@attrs.define(eq=False)
class ApprovalWatch:
    store: _Store
    listener: OutcomeListener
    #: Announces decisions made anywhere; without it (or while it is deaf) the store is polled.
    changes: ChangeFeed
    _closed: trio.Event = attrs.field(factory=trio.Event, init=False)
    # The wait between rounds, cut short by close().
    _waiting: trio.CancelScope = attrs.field(factory=trio.CancelScope, init=False)

    def close(self) -> None:
        """Stop watching (shutdown): :meth:`serve` returns after the round in progress."""
        self._closed.set()
        self._waiting.cancel()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Poll until :meth:`close` (or cancelled); a store that fails is logged and retried."""
        task_status.started()
        next_expiry = trio.current_time()
        while not self._closed.is_set():
            seen = self.changes.generation(Topic.APPROVALS)
            try:
                if trio.current_time() >= next_expiry:
                    next_expiry = trio.current_time() + _EXPIRE_S
                    await expire_due(self.store, actor=ACTOR)
                await self._report()
            except StoreError as exc:
                log.warning("approvals: cannot read the queue (%s); retrying", exc.message)
            except Exception:
                # One bad round must not end the watch: sessions would never hear again.
                log.exception("approvals: watching the queue failed; retrying")
            if self._closed.is_set():
                break
            with trio.move_on_after(max(0.0, next_expiry - trio.current_time())) as waiting:
                self._waiting = waiting
                await self.changes.wait(Topic.APPROVALS, seen, poll_s=_POLL_S)

    async def _report(self) -> None:
        awaited = self.listener.awaited()
        if not awaited:
            return
        # Only where they stand, and the outcomes of the settled: never their
        # arguments (up to 256 KiB each, and asked for four times a second).
        found = await self.store.approval_outcomes(sorted(awaited), now=utcnow())
        for gone in awaited - found.known:
            self.listener.forget(gone)  # deleted with its group: nothing will come
        if any(outcome.status is ApprovalStatus.PENDING for outcome in found.finished):
            # Past their time but not yet swept: expire them (recorded) before saying so.
            await expire_due(self.store, actor=ACTOR)
        for outcome in found.finished:
            await self.listener.deliver(outcome, outcome_data(outcome))
