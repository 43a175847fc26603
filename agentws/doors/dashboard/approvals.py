"""The dashboard's approval queue, across workspaces (where chat messages link).

The queue and the history of decisions, each paged; one call's page;
deciding one call, or the calls ticked in the queue. Approving waits a
while for the service to run the call, and the notice says how it went.
"""

from __future__ import annotations

from typing import Any

import trio
from quart import Response, request, url_for

from agentws.admins.access import AdminServices, Caller
from agentws.approvals import decisions
from agentws.core.errors import AgentwsError, ValidationError
from agentws.domain.approval_lists import DECIDED, MAX_PAGE, ApprovalPage
from agentws.domain.models import Approval, ApprovalStatus, Group, McpToken, Webhook, Workspace
from agentws.domain.typed_numbers import NumberError, whole_number
from agentws.doors.dashboard.frame import done, render_page
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable
from agentws.tools.approval_queue import (
    count_approvals,
    current_status,
    find_approval,
    list_approvals,
)
from agentws.workspaces import admin as registry

__all__ = ["routes"]

routes = RouteTable[AdminServices]()

# Approving (or retrying) waits this long for the service to run the call before the
# page comes back; it shows "approved" or "running" if the call has not finished.
_OUTCOME_WAIT_S = 10.0
# Rows of each list on the approvals page (``?limit=`` up to MAX_PAGE).
_APPROVALS_PAGE = 50


def _page_size() -> int:
    text = request.args.get("limit", "")
    # A page size from a link: one that is not a number gets the usual page.
    try:
        return min(whole_number(text, name="limit", low=1, high=10**9), MAX_PAGE)
    except NumberError:
        return _APPROVALS_PAGE


async def _approval_list(admin: AdminServices, cursor_arg: str, **query: Any) -> ApprovalPage:
    """A page of a list of approvals; a cursor that is not one a page gave starts at the top."""
    store = admin.store
    try:
        return await list_approvals(store, cursor=request.args.get(cursor_arg) or None, **query)
    except ValidationError:
        return await list_approvals(store, **query)


@routes.get("/approvals")
@signed_in
async def approvals(admin: AdminServices, caller: Caller) -> Response:
    store = admin.store
    # The queue spans workspaces; the one named (else the first) is where the menu points.
    workspaces = await registry.list_workspaces(store)
    wanted = request.args.get("workspace")
    workspace = next((w for w in workspaces if w.slug == wanted), None)
    if workspace is None and workspaces:
        workspace = workspaces[0]
    waiting = frozenset({ApprovalStatus.PENDING})
    size = _page_size()
    pending = await _approval_list(
        admin, "cursor", workspace_slug=None, statuses=waiting, limit=size
    )
    history = await _approval_list(
        admin, "history", workspace_slug=None, statuses=DECIDED, limit=size, newest_first=True
    )
    return await render_page(
        admin,
        "approvals.html",
        caller,
        pending=pending,
        waiting=await count_approvals(store, workspace_slug=None, statuses=waiting),
        history=history,
        workspace=workspace,
        spans_workspaces=True,
        cursor=request.args.get("cursor") or None,
        history_cursor=request.args.get("history") or None,
        limit=request.args.get("limit") or None,
    )


@routes.post("/approvals/bulk")
@signed_in
async def approvals_bulk(admin: AdminServices, caller: Caller) -> Response:
    """Approve or deny the calls ticked in the queue, each as its own page would."""
    form = await request.form
    here = url_for("dashboard.approvals", workspace=form.get("workspace") or None)
    decision = form.get("decision")
    ids = list(dict.fromkeys(form.getlist("id")))
    if decision not in ("approve", "deny"):
        return done(here, f"unknown decision {decision!r}", error=True)
    if not ids:
        return done(here, "Tick at least one call to decide.", error=True)
    if len(ids) > MAX_PAGE:
        return done(here, f"Decide at most {MAX_PAGE} calls at once.", error=True)
    reason = form.get("reason") or None
    problems: list[str] = []
    decided_ids: list[str] = []
    for approval_id in ids:
        try:
            if decision == "approve":
                await decisions.approve(admin.store, approval_id, actor=caller.actor, reason=reason)
            else:
                await decisions.deny(admin.store, approval_id, actor=caller.actor, reason=reason)
        except AgentwsError as exc:
            problems.append(exc.message)
            continue
        decided_ids.append(approval_id)
    if decision == "approve":
        # The service runs them: as for one call, show outcomes that come soon (one
        # deadline for them all), else where each stands.
        with trio.move_on_after(_OUTCOME_WAIT_S):
            for approval_id in decided_ids:
                await admin.approval_outcome(approval_id)
    outcomes: dict[str, int] = {}
    for approval_id in decided_ids:
        status = current_status(await find_approval(admin.store, approval_id)).value
        outcomes[status] = outcomes.get(status, 0) + 1
    count = sum(outcomes.values())
    verb = "Approved" if decision == "approve" else "Denied"
    notice = f"{verb} {count} call{'s' if count != 1 else ''}"
    if decision == "approve" and count:
        notice += ": " + ", ".join(f"{n} {status}" for status, n in sorted(outcomes.items()))
    notice += "."
    if problems:
        notice += f" {len(problems)} not decided: " + "; ".join(problems)
    return done(here, notice, error=bool(problems) and not count)


async def _asked_by(admin: AdminServices, approval: Approval) -> str:
    """Who asked, by the name an admin knows them by (a token's, a webhook's)."""
    store = admin.store
    if approval.token_id is not None:
        token = await store.find(McpToken, id=approval.token_id)
        if token is not None:
            return f"token {token.name}"
    kind, _, ident = approval.requested_by.partition(":")
    if kind == "webhook":
        hook = await store.find(Webhook, id=ident)
        if hook is not None:
            return f"webhook {hook.name}"
    return approval.requested_by


@routes.get("/approvals/<approval_id>")
@signed_in
async def approval(admin: AdminServices, caller: Caller, approval_id: str) -> Response:
    store = admin.store
    found = await find_approval(store, approval_id)
    group = await store.get(Group, found.group_id)
    workspace = await store.get(Workspace, group.workspace_id)
    return await render_page(
        admin,
        "approval.html",
        caller,
        asked_by=await _asked_by(admin, found),
        approval=found,
        approval_status=current_status(found).value,
        group=group,
        workspace=workspace,
    )


@routes.post("/approvals/<approval_id>/<decision>")
@signed_in
async def approval_decide(
    admin: AdminServices, caller: Caller, approval_id: str, decision: str
) -> Response:
    form = await request.form
    here = url_for("dashboard.approval", approval_id=approval_id)
    reason = form.get("reason") or None
    try:
        if decision in ("approve", "retry"):
            decide = decisions.approve if decision == "approve" else decisions.retry
            decided = await decide(admin.store, approval_id, actor=caller.actor, reason=reason)
            # The service runs it: show the outcome if it comes soon, else where it stands.
            with trio.move_on_after(_OUTCOME_WAIT_S):
                decided = await admin.approval_outcome(approval_id)
            decided = await find_approval(admin.store, approval_id)
        elif decision == "deny":
            decided = await decisions.deny(
                admin.store, approval_id, actor=caller.actor, reason=reason
            )
        else:
            return done(here, f"unknown decision {decision!r}", error=True)
    except AgentwsError as exc:
        return done(here, exc.message, error=True)
    if decided.status is ApprovalStatus.FAILED:
        return done(here, f"{decided.tool_name} failed: {decided.error}", error=True)
    return done(here, f"{decided.tool_name}: {current_status(decided).value}.")
