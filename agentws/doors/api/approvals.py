"""The admin API's approval queue: list, show, approve, retry, deny.

The list is the queue (pending calls) unless ``?status=`` names another
status, or ``all``, as ``agentws approval list`` does.

Approving (or retrying) waits for the service to run the call before it
answers, for ``wait_s`` seconds (30 by default, at most 300); the answer
then shows the approval as it stands: run, or still approved or running.
"""

from __future__ import annotations

from typing import Any, Protocol

import trio
from quart import request

from agentws.admins.access import AdminServices, Caller
from agentws.approvals import decisions
from agentws.core.errors import ValidationError
from agentws.domain.models import Approval, ApprovalStatus, Group, Workspace
from agentws.doors.api.calls import Answer, Endpoints, query_number, read_body
from agentws.doors.api.shapes.bodies import Decision
from agentws.doors.views import approval_json, approval_summary_json
from agentws.store.sql_approval_decisions import ApprovalDecisionStore
from agentws.store.sql_approval_runs import ApprovalRunStore
from agentws.store.sql_records import RecordStore
from agentws.tools.approval_queue import find_approval
from agentws.tools.approval_queue import list_approvals as approvals_listed

__all__ = ["routes"]

routes = Endpoints()


class _DecidingStore(RecordStore, ApprovalDecisionStore, ApprovalRunStore, Protocol):
    """What approving, retrying and denying use of the store, together."""


class _Decide(Protocol):
    """:func:`agentws.approvals.decisions.approve`, ``retry`` or ``deny``."""

    async def __call__(
        self, store: _DecidingStore, approval_id: str, /, *, actor: str, reason: str | None
    ) -> Approval: ...


@routes.get("/approvals")
async def list_approvals(admin: AdminServices, caller: Caller) -> Answer:
    # The queue by default, as `agentws approval list` shows it; `all` for every status.
    wanted = request.args.get("status") or ApprovalStatus.PENDING.value
    if wanted != "all" and wanted not in {s.value for s in ApprovalStatus}:
        allowed = ", ".join(s.value for s in ApprovalStatus)
        raise ValidationError(f"status must be one of {allowed}, or all (default: pending)")
    statuses = None if wanted == "all" else frozenset({ApprovalStatus(wanted)})
    limit = query_number("limit", 50)
    page = await approvals_listed(
        admin.store,
        workspace_slug=request.args.get("workspace"),
        statuses=statuses,
        limit=limit,
        cursor=request.args.get("cursor") or None,
    )
    return {
        "items": [approval_summary_json(a) for a in page.items],
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
    }


async def _approval_view(store: RecordStore, approval_id: str) -> dict[str, Any]:
    approval = await find_approval(store, approval_id)
    group = await store.get(Group, approval.group_id)
    return approval_json(approval, group, await store.get(Workspace, group.workspace_id))


@routes.get("/approvals/<approval_id>")
async def show_approval(admin: AdminServices, caller: Caller, approval_id: str) -> Answer:
    return await _approval_view(admin.store, approval_id)


@routes.post("/approvals/<approval_id>/approve")
async def approve_call(admin: AdminServices, caller: Caller, approval_id: str) -> Answer:
    return await _decided(admin, caller, approval_id, decisions.approve, runs=True)


@routes.post("/approvals/<approval_id>/retry")
async def retry_call(admin: AdminServices, caller: Caller, approval_id: str) -> Answer:
    return await _decided(admin, caller, approval_id, decisions.retry, runs=True)


@routes.post("/approvals/<approval_id>/deny")
async def deny_call(admin: AdminServices, caller: Caller, approval_id: str) -> Answer:
    return await _decided(admin, caller, approval_id, decisions.deny, runs=False)


async def _decided(
    admin: AdminServices, caller: Caller, approval_id: str, decide: _Decide, *, runs: bool
) -> dict[str, Any]:
    """The approval once ``decide`` recorded the body's decision; when the call ``runs``,
    once the service ran it, or after the body's ``wait_s``."""
    decision = await read_body(Decision)
    await decide(admin.store, approval_id, actor=caller.actor, reason=decision.reason)
    if runs:
        with trio.move_on_after(decision.wait_s):
            await admin.approval_outcome(approval_id)
    return await _approval_view(admin.store, approval_id)
