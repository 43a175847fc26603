"""The admin API's approval queue: list, show, approve, retry, deny.

The list is the queue (pending calls) unless ``?status=`` names another
status, or ``all``, as ``agentws approval list`` does.

Approving (or retrying) waits for the service to run the call before it
answers, for ``wait_s`` seconds (30 by default, at most 300); the answer
then shows the approval as it stands: run, or still approved or running.
"""

from __future__ import annotations

from typing import Any

import trio
from quart import request

from agentws.admin_access import AdminServices, Caller
from agentws.approvals import decisions
from agentws.blueprints import RouteTable
from agentws.domain.models import ApprovalStatus, Group, Workspace
from agentws.errors import ValidationError
from agentws.store.sql_records import RecordStore
from agentws.tools.approval_queue import find_approval
from agentws.tools.approval_queue import list_approvals as approvals_listed
from agentws.views import approval_json, approval_summary_json

from .calls import Answer, endpoint, field, json_body, query_number

__all__ = ["routes"]

routes = RouteTable[AdminServices]()

# How long approve/retry wait for the service to run the call before answering, by
# default and at most (the answer then shows it approved or running).
_OUTCOME_WAIT_S = 30.0
_MAX_OUTCOME_WAIT_S = 300.0


@routes.get("/approvals")
@endpoint
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
@endpoint
async def show_approval(admin: AdminServices, caller: Caller, approval_id: str) -> Answer:
    return await _approval_view(admin.store, approval_id)


@routes.post("/approvals/<approval_id>/approve")
@endpoint
async def approve_call(admin: AdminServices, caller: Caller, approval_id: str) -> Answer:
    data = await json_body()
    await decisions.approve(
        admin.store, approval_id, actor=caller.actor, reason=field(data, "reason", str)
    )
    return await _approval_outcome(admin, approval_id, data)


@routes.post("/approvals/<approval_id>/retry")
@endpoint
async def retry_call(admin: AdminServices, caller: Caller, approval_id: str) -> Answer:
    data = await json_body()
    await decisions.retry(
        admin.store, approval_id, actor=caller.actor, reason=field(data, "reason", str)
    )
    return await _approval_outcome(admin, approval_id, data)


async def _approval_outcome(
    admin: AdminServices, approval_id: str, data: dict[str, Any]
) -> dict[str, Any]:
    """The approval once the service ran it, or after ``wait_s`` (default 30, at most 300)."""
    wait_s = field(data, "wait_s", (int, float), _OUTCOME_WAIT_S)
    if not 0 <= wait_s <= _MAX_OUTCOME_WAIT_S:
        raise ValidationError(f"'wait_s' must be 0 to {_MAX_OUTCOME_WAIT_S:g}")
    with trio.move_on_after(wait_s):
        await admin.approval_outcome(approval_id)
    return await _approval_view(admin.store, approval_id)


@routes.post("/approvals/<approval_id>/deny")
@endpoint
async def deny_call(admin: AdminServices, caller: Caller, approval_id: str) -> Answer:
    data = await json_body()
    await decisions.deny(
        admin.store, approval_id, actor=caller.actor, reason=field(data, "reason", str)
    )
    return await _approval_view(admin.store, approval_id)
