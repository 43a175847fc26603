"""Running approved calls: in the service, with its settings, once, on one instance.

An admin's approval is only recorded where it is made (the CLI, the admin
API, the dashboard, any instance). :class:`ApprovalRuns`, a task of the
service's root nursery, claims approved calls from the store and runs them
with this process's settings, connector links and secret key: never the
CLI's environment. The change feed wakes it when a decision is made
anywhere (PostgreSQL); otherwise it reads the store every ``_POLL_S``.

One instance runs each call: the claim is a lease in the store, renewed
every ``_RENEW_S`` while the call runs, and the outcome is recorded only by
the lease's holder. A lease that lapses (its instance died, or lost the
database for longer than ``_LEASE_S``) fails the call with an error saying
whether it acted is unknown; it is never run again unasked, only when an
admin retries it. A call cut off by shutdown is failed the same way.

Before it runs, the call is checked again: the tool is still the group's
and unchanged (same definition), the token that asked is not revoked, the
permission still lets it run, and the stored arguments match the approved
hash. The result (or the error) is recorded with the request, and the
sessions that wait for it are told by :mod:`~agentws.approvals.notifier`.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any, Protocol

import attrs
import mcp_types as types
import trio

from agentws.approvals.decisions import audit_approval
from agentws.common.changes import ChangeFeed, Topic
from agentws.core.errors import AgentwsError, StoreError
from agentws.domain.models import Approval, ApprovalStatus, Capability, Group, McpToken
from agentws.domain.models import arguments_hash as hash_arguments
from agentws.domain.permissions import Decision, decide
from agentws.domain.rules import utcnow
from agentws.settings.secret_box import Keys, SecretBox
from agentws.store.sql_approval_decisions import ApprovalDecisionStore
from agentws.store.sql_approval_runs import ApprovalRunStore
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_records import RecordStore
from agentws.tools.approval_queue import current_status, find_approval, stored_arguments
from agentws.tools.catalog import group_tool
from agentws.tools.execution import ToolRunner
from agentws.tools.spec import ToolSpec

__all__ = ["ACTOR", "ApprovalRuns", "await_outcome", "run_claimed"]

log = logging.getLogger("agentws.approvals")

#: Who the audit log says ran an approved call (on the approver's decision).
ACTOR = "system:approvals"

# Approved calls this instance runs at once; more wait for a free slot (or another instance).
_MAX_RUNNING = 8
# A claim lapses this long after its last renewal; renewed three times as often.
_LEASE_S = 30.0
_RENEW_S = 10.0
# Without the change feed, the store is read for approved calls this often.
_POLL_S = 0.5
# Runs whose lease lapsed are looked for this often.
_LAPSE_EVERY_S = 5.0
# Recording the outcome of a call cut off by shutdown may take this long.
_CLEANUP_S = 5.0
# Someone waiting for an outcome reads the store this often without the feed.
_WAIT_POLL_S = 0.2


class _Store(RecordStore, ApprovalDecisionStore, ApprovalRunStore, CatalogStore, Protocol):
    """The areas of the store this module uses."""


def _unknown(why: str) -> str:
    return (
        f"{why}; whether it acted upstream is unknown: check, then retry it if needed "
        "(`agentws approval retry ID`)"
    )


_LAPSED = _unknown("the instance running it stopped before it finished (its lease lapsed)")


async def await_outcome(
    store: RecordStore, approval_id: str, *, changes: ChangeFeed | None
) -> Approval:
    """Wait until an approved call has an outcome (or is otherwise finished); return it.

    The caller bounds the wait (``trio.move_on_after``): a call waits for as
    long as no service runs. ``changes`` wakes the wait when an outcome is
    announced; without it (or while it is deaf) the store is polled.

    Error handling:
        NotFoundError if the approval is deleted meanwhile.
    """
    while True:
        seen = changes.generation(Topic.APPROVALS) if changes is not None else 0
        approval = await find_approval(store, approval_id)
        if current_status(approval).finished:
            return approval
        if changes is not None:
            await changes.wait(Topic.APPROVALS, seen, poll_s=_WAIT_POLL_S)
        else:
            await trio.sleep(_WAIT_POLL_S)


async def run_claimed(
    store: _Store, approval: Approval, *, owner: str, runner: ToolRunner, box: SecretBox | None
) -> Approval | None:
    """Run an approved call that ``owner`` holds the lease of, and record its outcome.

    Returns:
        The request, ``executed`` (with the tool's result) or ``failed``
        (with the error: the tool failed, changed, went away, was denied
        meanwhile, or the token that asked was revoked); None if the lease
        was lost meanwhile (the outcome is then the lapse's).

    Resource handling:
        Cancelled while the call runs (shutdown), it records the call as
        failed with an unknown outcome, shielded and bounded.
    """
    group = await store.find(Group, id=approval.group_id)
    result: types.CallToolResult | None = None
    problem: str | None = None
    finished: Approval | None = None
    recorded = False
    try:
        try:
            if group is None:
                problem = "its group was deleted; nothing ran"
            else:
                problem, tool, arguments = await _why_not(store, approval, group, box)
                if tool is not None:
                    result = await runner.run(
                        tool, arguments, group=group, token_id=approval.token_id
                    )
                    if result.is_error:
                        problem = _text(result) or "the tool reported an error"
        except AgentwsError as exc:
            problem = exc.message
        except Exception:
            log.exception("approval %s: running %s failed", approval.id, approval.tool_name)
            problem = "internal error while running the call; the server log has details"
        status = ApprovalStatus.FAILED if problem else ApprovalStatus.EXECUTED
        finished = await store.finish_approval(
            approval.id,
            owner=owner,
            status=status,
            result=_result_json(result),
            error=problem,
            now=utcnow(),
        )
        recorded = True
    finally:
        if not recorded:
            problem = _unknown(f"the service stopped while {approval.tool_name} ran")
            with trio.move_on_after(_CLEANUP_S, shield=True):
                finished = await store.finish_approval(
                    approval.id,
                    owner=owner,
                    status=ApprovalStatus.FAILED,
                    result=None,
                    error=problem,
                    now=utcnow(),
                )
    if finished is None:
        log.warning(
            "approval %s: its lease was lost while it ran; outcome not recorded", approval.id
        )
        return None
    await _audit_run(store, group, finished, owner)
    return finished


async def _audit_run(
    store: RecordStore, group: Group | None, approval: Approval, owner: str
) -> None:
    await audit_approval(
        store,
        group,
        ACTOR,
        "approval.execute",
        approval,
        approved_by=approval.decided_by,
        instance=owner,
        attempt=approval.attempts,
        outcome=approval.status.value,
        error=approval.error,
    )


async def _why_not(
    store: _Store, approval: Approval, group: Group, box: SecretBox | None
) -> tuple[str | None, ToolSpec | None, dict[str, Any]]:
    """Why the approved call must not run now, or the tool and arguments to run it with."""
    tool = await group_tool(store, group, approval.tool_name)
    if tool is None:
        return f"{approval.tool_name} is no longer one of this group's tools; nothing ran", None, {}
    if tool.definition_hash != approval.definition_hash:
        why = f"{approval.tool_name} has changed since the call was queued; nothing ran"
        return why + " (the caller must ask again)", None, {}
    scope = Capability.WRITE
    if approval.token_id is not None:
        token = await store.find(McpToken, id=approval.token_id)
        if token is None or token.revoked:
            return "the token that queued this call has been revoked; nothing ran", None, {}
        scope = token.scope
    if decide(tool.capability, tool.permission, scope) is Decision.DENY:
        why = f"permission denied: {tool.name} may no longer be called by this caller"
        return why, None, {}
    arguments = stored_arguments(approval, box)
    if hash_arguments(approval.tool_name, arguments) != approval.arguments_hash:
        return "the stored arguments do not match the approved call; nothing ran", None, {}
    return None, tool, arguments


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def _result_json(result: types.CallToolResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    data: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return data


@attrs.define(eq=False)
class ApprovalRuns:
    """Claims approved calls and runs them, in the service's nursery.

    Args:
        store: where decisions are recorded.
        runner: runs a group's tools with this process's settings and links.
        keys: the service key, which opens sealed arguments.
        changes: announces decisions made anywhere.
        owner: this instance's id, which its leases carry.
    """

    store: _Store
    runner: ToolRunner
    keys: Keys
    changes: ChangeFeed
    owner: str
    _closed: bool = attrs.field(default=False, init=False)
    _poked: bool = attrs.field(default=False, init=False)
    _waiting: trio.CancelScope = attrs.field(factory=trio.CancelScope, init=False)
    _running: int = attrs.field(default=0, init=False)

    def close(self) -> None:
        """Claim nothing more (shutdown); calls running go on until they end or are cancelled."""
        self._closed = True
        self._waiting.cancel()

    def wake(self) -> None:
        """Look for approved calls now (a decision was made in this process)."""
        self._poked = True
        self._waiting.cancel()

    async def outcome(self, approval_id: str) -> Approval:
        """Wait for the outcome of an approved call (bounded by the caller); see
        :func:`await_outcome`."""
        self.wake()
        return await await_outcome(self.store, approval_id, changes=self.changes)

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Claim and run approved calls until :meth:`close`, then wait for those running.

        Resource handling:
            Each claimed call runs in this task's nursery under a lease it
            renews; the nursery ends when they have.

        Error handling:
            A store that fails is logged and tried again; nothing ends the loop.
        """
        async with trio.open_nursery() as runs:
            task_status.started()
            next_lapse = trio.current_time()
            while not self._closed:
                seen = self.changes.generation(Topic.APPROVALS)
                try:
                    if trio.current_time() >= next_lapse:
                        next_lapse = trio.current_time() + _LAPSE_EVERY_S
                        await self._lapse()
                    await self._claim(runs)
                except StoreError as exc:
                    log.warning("approvals: cannot claim calls (%s); retrying", exc.message)
                except Exception:
                    # One bad round must not end the task: approved calls would never run.
                    log.exception("approvals: claiming approved calls failed; retrying")
                if self._closed:
                    break
                if self._poked:
                    self._poked = False
                    continue
                with trio.CancelScope(deadline=next_lapse) as waiting:
                    self._waiting = waiting
                    await self.changes.wait(Topic.APPROVALS, seen, poll_s=_POLL_S)

    async def _claim(self, runs: trio.Nursery) -> None:
        free = _MAX_RUNNING - self._running
        if free < 1:
            return
        lease = utcnow() + timedelta(seconds=_LEASE_S)
        for approval in await self.store.claim_approvals(
            owner=self.owner, lease_expires_at=lease, limit=free
        ):
            self._running += 1
            runs.start_soon(self._run, approval)

    async def _lapse(self) -> None:
        for approval in await self.store.lapse_approval_leases(now=utcnow(), error=_LAPSED):
            log.warning(
                "approval %s: %s was cut off on instance %s; marked failed",
                approval.id,
                approval.tool_name,
                approval.lease_owner,
            )
            group = await self.store.find(Group, id=approval.group_id)
            await _audit_run(self.store, group, approval, approval.lease_owner or "")

    async def _run(self, approval: Approval) -> None:
        log.info(
            "approval %s: running %s (attempt %d)",
            approval.id,
            approval.tool_name,
            approval.attempts,
        )
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._renew, approval.id)
                outcome = await run_claimed(
                    self.store,
                    approval,
                    owner=self.owner,
                    runner=self.runner,
                    box=self.keys.optional(),
                )
                nursery.cancel_scope.cancel()
            if outcome is not None:
                log.info(
                    "approval %s: %s %s", approval.id, approval.tool_name, outcome.status.value
                )
        except StoreError as exc:
            log.warning(
                "approval %s: cannot record the outcome (%s); its lease will lapse",
                approval.id,
                exc.message,
            )
        except Exception:
            log.exception("approval %s: running it failed", approval.id)
        finally:
            self._running -= 1
            self.wake()  # a slot is free

    async def _renew(self, approval_id: str) -> None:
        while True:
            await trio.sleep(_RENEW_S)
            lease = utcnow() + timedelta(seconds=_LEASE_S)
            try:
                held = await self.store.renew_approval_lease(
                    approval_id, owner=self.owner, lease_expires_at=lease
                )
            except StoreError as exc:
                log.warning("approval %s: cannot renew its lease (%s)", approval_id, exc.message)
                continue
            if not held:
                log.warning("approval %s: its lease was lost while it ran", approval_id)
                return
